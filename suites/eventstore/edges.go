package eventstore

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/spec"
)

// invalidVersions are the versions ES-1.14 asks for: zero, the first
// negative, and the negatives a 16- or 32-bit wrap of a large version gives.
var invalidVersions = []int{0, -1, -(1 << 15), -(1 << 31)}

// ruleVersionEdges is ES-1.14.
func ruleVersionEdges(r *spec.R, t target) {
	f := open(r, t)

	// Version 0 and below, on a new aggregate and on one with a tail: an
	// argument error, nothing stored, the request id not found.
	fresh, existing := f.aggregate("fresh"), f.aggregate("existing")
	first := stream(existing, es.InitialVersion, f.req("1"))
	f.mustAppend(first)
	for _, v := range invalidVersions {
		for _, c := range []struct {
			what string
			agg  es.AggregateID
			want []es.Stream
		}{{"a new aggregate", fresh, nil}, {"an aggregate at version 1", existing, []es.Stream{first}}} {
			r.Check(func() {
				id := f.req("v" + strconv.Itoa(v))
				err := f.append("client", stream(c.agg, v, id, "E1", "E2"))
				r.Expect(errors.Is(err, es.ErrInvalidArgument)).To(gomega.BeTrue(), "an append at version %d on %s must return es.ErrInvalidArgument (eskit.Validate), got %s", v, c.what, said(err, 60))
				r.Expect(isConflict(err)).To(gomega.BeFalse(), "an append at version %d on %s must return es.ErrInvalidArgument, not a conflict, got %s", v, c.what, said(err, 60))
				f.expectHistory(c.agg, c.want, fmt.Sprintf("after the refused append at version %d on %s", v, c.what))
				r.Expect(f.exists(c.agg, id)).To(gomega.BeFalse(), "RequestIDExists must not find the request id %s of the refused append at version %d on %s", short(id), v, c.what)
			})
		}
	}
	if r.Failed() {
		return
	}
	r.Ev.Notef("versions 0, -1, -32768 and -2^31 were argument errors on a new and an existing aggregate, nothing stored, the request ids not found")
}
