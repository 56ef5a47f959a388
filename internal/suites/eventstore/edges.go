package eventstore

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/spec"
)

// The edges ES-1.14 grows an aggregate past: a SMALLINT column holds up to
// 2^15-1, an unsigned 16-bit counter up to 2^16-1.
const (
	edge15 = 1 << 15
	edge16 = 1 << 16
	// edgeTail is where the growth stops: past 2^16 by two, so that an
	// append at a taken version past 2^16 and one at the next free version
	// can both be asked.
	edgeTail = edge16 + 2
	// edgeShare per cent of the rule's remaining deadline is the growth's:
	// a slow store stops short and the rule is unknown, never pass.
	edgeShare = 60
	// edgeGrowthSetUp is ES-1.14's time on top of the rule timeout: with
	// the default 60 s the growth gets 60% of 150 s, 65538 appends at
	// 730 a second.
	edgeGrowthSetUp = 90 * time.Second
)

// invalidVersions are the versions ES-1.14 (a) asks for: zero, the first
// negative, and the negatives a 16- or 32-bit wrap of a large version gives.
var invalidVersions = []int{0, -1, -edge15, -(1 << 31)}

// ruleVersionEdges is ES-1.14.
func ruleVersionEdges(r *spec.R, t Target) {
	f := open(r, t)

	// (a) Version 0 and below, on a new aggregate and on one with a tail:
	// an argument error, nothing stored, the request id not found.
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
		return // (b) takes seconds; (a) has already decided
	}

	// (b) One aggregate past 2^15 and 2^16 versions. A stream is one
	// version however many events it carries, so the growth is one append
	// per version; only the appends are left off the timeline (a step
	// says how far they went), the edges' own calls are on it.
	agg := f.aggregate("edges")
	base := f.req("grow")
	at := func(v int) es.Stream {
		st := es.Stream{Aggregate: agg, Version: v, RequestID: base + "-" + strconv.Itoa(v), CommandID: "cmd-" + nonce(), Events: []es.Event{{Name: "Grown", Body: []byte(strconv.Itoa(v))}}}
		if v >= edge15-2 && v <= edge15+1 || v >= edge16-2 && v <= edge16+1 {
			// At the edges several events, as a batch write stores them.
			st = stream(agg, v, st.RequestID, "E1", "E2", "E3")
		}
		return st
	}
	stop := time.Now().Add(time.Minute)
	if dl, ok := r.Context().Deadline(); ok {
		stop = time.Now().Add(time.Until(dl) * edgeShare / 100)
	}
	handles := f.handles()
	start, tail := time.Now(), 0
	var undecided error
	for v := 1; v <= edgeTail; v++ {
		if v%1024 == 0 {
			r.Progress(v, edgeTail, "versions")
			if time.Now().After(stop) {
				undecided = fmt.Errorf("the growth's %d%% of the deadline ran out", edgeShare)
				break
			}
		}
		st := at(v)
		err := handles[v%len(handles)].Append(f.ctx, st)
		if err == nil {
			tail = v
			continue
		}
		if isConflict(err) || errors.Is(err, es.ErrInvalidArgument) {
			// The store answered: the next free version was refused.
			f.rec.Invoke("grower", "append", describe(st)).Complete(classify(err))
			r.Expect(err == nil).To(gomega.BeTrue(), "an append at version %d, the next free version (tail %d), must be stored, got %s", v, tail, said(err, 60))
		}
		undecided = err // the rule's deadline, or a failure that is not an answer
		break
	}
	grew := time.Since(start)
	if f.ctx.Err() != nil {
		// The rule's deadline came inside the growth: nothing after it
		// could be asked.
		r.Unknown("the rule's deadline came at version %d of the %d the edges need, after %.1f s: %v", tail, edgeTail, grew.Seconds(), undecided)
	}
	f.rec.Invoke("grower", "append", fmt.Sprintf("%s versions 1..%d", short(agg.ID), tail)).OK(fmt.Sprintf("%d streams stored in %d ms", tail, grew.Milliseconds()))
	r.Ev.Figure("versions stored", tail, "")
	r.Ev.Figure("growth time", grew.Milliseconds(), "ms")

	// Each edge reached is checked, whether or not the next was.
	check := func(from, to int) {
		r.Check(func() {
			got, err := f.load(agg, from, to)
			r.Expect(err).NotTo(gomega.HaveOccurred(), "Load [%d,%d]", from, to)
			var want []es.Stream
			for v := from; v <= to; v++ {
				want = append(want, at(v))
			}
			if len(got) == len(want) {
				// The command ids were drawn per call: compare the rest.
				for i := range got {
					want[i].CommandID = got[i].CommandID
				}
			}
			f.expectStreams(got, want, fmt.Sprintf("Load [%d,%d] of an aggregate at version %d must return exactly versions %d to %d;", from, to, tail, from, to))
		})
	}
	for _, e := range []int{edge15, edge16} {
		if tail < e+1 {
			continue
		}
		check(e-2, e+1)
		check(e-1, e-1)
		check(e, e)
	}
	if tail == edgeTail {
		r.Check(func() {
			err := f.append("stale-writer", stream(agg, edge16+1, f.req("taken")))
			var vc *es.VersionConflictError
			r.Expect(errors.As(err, &vc)).To(gomega.BeTrue(), "an append at the taken version %d (tail %d) must return es.VersionConflictError, got %s", edge16+1, tail, said(err, 60))
			r.Expect(vc.Version).To(gomega.Equal(edge16+1), "the version conflict carries the version asked for")
		})
		r.Check(func() {
			next := stream(agg, edgeTail+1, f.req("next"))
			r.Expect(f.append("client", next)).To(gomega.Succeed(), "an append at the next free version %d must be stored", edgeTail+1)
			got, err := f.load(agg, edgeTail+1, edgeTail+1)
			r.Expect(err).NotTo(gomega.HaveOccurred(), "Load [%d,%d]", edgeTail+1, edgeTail+1)
			f.expectStreams(got, []es.Stream{next}, fmt.Sprintf("Load [%d,%d]", edgeTail+1, edgeTail+1))
		})
	}
	if undecided != nil && !r.Failed() {
		r.Unknown("the aggregate reached version %d of the %d the edges need in %.1f s (%.0f appends/s): %v; versions 0 and below were refused as argument errors%s",
			tail, edgeTail, grew.Seconds(), float64(tail)/max(grew.Seconds(), 1e-3), undecided, reachedNote(tail))
	}
	if r.Failed() {
		return
	}
	r.Ev.Notef("versions 0, -1, -32768 and -2^31 were argument errors on a new and an existing aggregate, nothing stored; one aggregate grew to version %d in %d ms and kept versions %d-%d and %d-%d, refused the taken version %d and stored version %d",
		tail, grew.Milliseconds(), edge15-2, edge15+1, edge16-2, edge16+1, edge16+1, edgeTail+1)
}

// reachedNote says which edge a growth that stopped short still checked.
func reachedNote(tail int) string {
	if tail > edge15 {
		return fmt.Sprintf("; the versions around %d were kept", edge15)
	}
	return ""
}
