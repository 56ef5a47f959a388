package eventstore

import (
	"context"
	"errors"
	"strconv"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/eskit"
	"github.com/onceproof/tck/internal/gen"
	"github.com/onceproof/tck/internal/spec"
)

func registerBasics(s *spec.Set, t target) {
	s.It("ES-1.1", func(r *spec.R) {
		f := open(r, t)
		agg := f.aggregate("a")
		st := stream(agg, es.InitialVersion, f.req("1"), "Created", "Priced", "Confirmed")
		// Bytes a text column or a JSON round trip would mangle.
		st.Events[1].Body = []byte{0x00, 0xff, 0xfe, '\n', 0x80, 'x'}
		st.Events[2].Body = []byte(`{"note":"  trailing  ","emoji":"\u00e9"}  `)
		// And a body of every generated class: empty, JSON whose whitespace
		// and key order must survive, binary, invalid UTF-8, over 1 MiB.
		for _, b := range f.bodiesOfEveryClass() {
			st.Events = append(st.Events, es.Event{Name: "Body " + b.Class, Body: b.B})
		}
		r.Expect(f.append("client", st)).To(gomega.Succeed(), "append at the initial version")
		f.expectHistory(agg, []es.Stream{st}, "round trip")
	})

	s.It("ES-1.2", func(r *spec.R) {
		f := open(r, t)
		agg := f.aggregate("unknown")
		got, err := f.load(agg, es.InitialVersion, eskit.MaxVersion)
		r.Expect(err).NotTo(gomega.HaveOccurred(), "loading an aggregate that was never written")
		r.Expect(len(got) == 0).To(gomega.BeTrue(), "loading an aggregate that was never written must return no streams, got %d", len(got))
	})

	s.It("ES-1.3", func(r *spec.R) {
		f := open(r, t)
		agg := f.aggregate("a")
		first := stream(agg, es.InitialVersion, f.req("1"))
		f.mustAppend(first)
		err := f.append("intent-2", stream(agg, es.InitialVersion, f.req("2")))
		var dup *es.DuplicateAggregateIDError
		r.Expect(errors.As(err, &dup)).To(gomega.BeTrue(), "the second create must return es.DuplicateAggregateIDError, got %s", said(err, 60))
		r.Expect(dup.Aggregate).To(gomega.Equal(agg), "the creation conflict names the aggregate")
		r.Expect(dup.RequestID).To(gomega.Equal(f.req("2")), "the creation conflict carries the refused request id, not the stored one")
		f.expectHistory(agg, []es.Stream{first}, "after the refused create")
	})

	s.It("ES-1.4", func(r *spec.R) {
		f := open(r, t)
		agg := f.aggregate("a")
		v1, v2, v3 := stream(agg, 1, f.req("1")), stream(agg, 2, f.req("2")), stream(agg, 3, f.req("3"))
		f.mustAppend(v1)
		f.mustAppend(v2)
		f.mustAppend(v3)
		// Below the tail, so that a conflict reporting the tail instead of
		// the version asked for shows.
		err := f.append("stale-writer", stream(agg, 2, f.req("4")))
		var vc *es.VersionConflictError
		r.Expect(errors.As(err, &vc)).To(gomega.BeTrue(), "an append at a taken version must return es.VersionConflictError, got %s", said(err, 60))
		r.Expect(vc.Aggregate).To(gomega.Equal(agg), "the version conflict names the aggregate")
		r.Expect(vc.Version).To(gomega.Equal(2), "the version conflict carries the version asked for (the tail is 3)")
		r.Expect(vc.RequestID).To(gomega.Equal(f.req("4")), "the version conflict carries the refused request id")
		f.expectHistory(agg, []es.Stream{v1, v2, v3}, "after the refused append")
	})

	s.It("ES-1.5", func(r *spec.R) {
		f := open(r, t)
		agg := f.aggregate("a")
		v1 := stream(agg, 1, f.req("1"))
		f.mustAppend(v1)
		err := f.append("retry", stream(agg, 2, f.req("1"), "Again", "AndAgain"))
		var dr *es.DuplicateRequestIDError
		r.Expect(errors.As(err, &dr)).To(gomega.BeTrue(), "the same request id at the next version must return es.DuplicateRequestIDError, got %s", said(err, 60))
		r.Expect(dr.Aggregate).To(gomega.Equal(agg), "the duplicate-request-id conflict names the aggregate")
		r.Expect(dr.RequestID).To(gomega.Equal(f.req("1")), "the duplicate-request-id conflict carries the request id")
		r.Expect(dr.Version).To(gomega.Equal(2), "the duplicate-request-id conflict carries the version asked for")
		f.expectHistory(agg, []es.Stream{v1}, "nothing persisted by the duplicate")

		// The whole history, not the newest streams: a request id from
		// the first, a middle and the last of a long history.
		long := f.aggregate("long")
		hist := f.longHistory(long)
		for _, v := range probedVersions {
			id := f.req(strconv.Itoa(v))
			err := f.append("retry", stream(long, longHistory+1, id))
			var dr *es.DuplicateRequestIDError
			r.Expect(errors.As(err, &dr)).To(gomega.BeTrue(), "request id %s (version %d of %d) retried at version %d must return es.DuplicateRequestIDError, got %s", short(id), v, longHistory, longHistory+1, said(err, 60))
			r.Expect(dr.RequestID).To(gomega.Equal(id), "the duplicate-request-id conflict carries the request id")
		}
		f.expectHistory(long, hist, "nothing persisted by the retries in a long history")
		r.Ev.Notef("the same request id is refused at the next version, also for the first, a middle and the last stream of a %d-stream history", longHistory)
	})

	s.It("ES-1.6", func(r *spec.R) {
		f := open(r, t)
		a, b := f.aggregate("a"), f.aggregate("b")
		sa, sb := stream(a, 1, f.req("shared")), stream(b, 1, f.req("shared"))
		err := f.append("client", sa)
		r.Expect(err == nil).To(gomega.BeTrue(), "a fresh request id on a new aggregate must be stored, got %s", said(err, 60))
		// Request ids are unique per aggregate (es.DuplicateRequestIDError
		// is raised when "the aggregate already holds" the id).
		err = f.append("client", sb)
		r.Expect(err == nil).To(gomega.BeTrue(), "the same request id on a second aggregate must be stored, got %s", said(err, 40))
		f.expectHistory(b, []es.Stream{sb}, "aggregate b")
	})

	s.It("ES-1.7", func(r *spec.R) {
		f := open(r, t)
		agg := f.aggregate("a")
		first := stream(agg, es.InitialVersion, f.req("1"))
		f.mustAppend(first)
		retry := first
		retry.CommandID = "cmd-retry-" + nonce() // a rebuilt command gets a new command id
		err := f.append("retry", retry)
		chosen := conflictName(err)
		r.Ev.Figure("conflict chosen for an exact retry", chosen, "")
		r.Expect(chosen).To(gomega.BeElementOf("DuplicateRequestID", "DuplicateAggregateID"),
			"an exact retry of a create must return es.DuplicateRequestIDError (or es.DuplicateAggregateIDError), got %s", said(err, 60))
		f.expectHistory(agg, []es.Stream{first}, "after the exact retry")
		r.Expect(f.exists(agg, f.req("1"))).To(gomega.BeTrue(), "the authoritative query must find the caller's own earlier success")
		// Another intent on the same id is told apart by the same query.
		err = f.append("other-intent", stream(agg, es.InitialVersion, f.req("other")))
		r.Expect(conflictName(err) == "DuplicateAggregateID").To(gomega.BeTrue(), "another intent creating the same aggregate must get es.DuplicateAggregateIDError, got %s", said(err, 60))
		r.Expect(f.exists(agg, f.req("other"))).To(gomega.BeFalse(), "the other intent's request id must not be found")
		if chosen != "DuplicateRequestID" {
			r.Ev.Notef("SHOULD: the store raised %s for an exact retry; DuplicateRequestID tells the caller directly that its own request succeeded", chosen)
		} else {
			r.Ev.Notef("exact retry raised DuplicateRequestID (the SHOULD choice); RequestIDExists confirmed the earlier success")
		}
	})

	s.It("ES-1.8", func(r *spec.R) {
		f := open(r, t)
		a, b := f.aggregate("a"), f.aggregate("b")
		f.mustAppend(stream(a, 1, f.req("a")))
		f.mustAppend(stream(b, 1, f.req("b")))
		r.Expect(f.exists(a, f.req("a"))).To(gomega.BeTrue(), "a stored request id")
		r.Expect(f.exists(a, f.req("never"))).To(gomega.BeFalse(), "an unknown request id")
		r.Expect(f.exists(b, f.req("a"))).To(gomega.BeFalse(), "the same request id on another aggregate")
		r.Expect(f.exists(f.aggregate("c"), f.req("a"))).To(gomega.BeFalse(), "a request id on an aggregate that does not exist")

		// Each identity field on its own: a query that leaves one out finds
		// req-a on an aggregate that never stored it.
		for _, v := range identityVariants(a) {
			r.Expect(f.exists(v.agg, f.req("a"))).To(gomega.BeFalse(), "the same id under another %s: the query must use every identity field", v.field)
		}

		// The whole history, not the latest stream.
		long := f.aggregate("long")
		f.longHistory(long)
		for _, v := range probedVersions {
			r.Expect(f.exists(long, f.req(strconv.Itoa(v)))).To(gomega.BeTrue(), "request id of version %d of a %d-stream history", v, longHistory)
		}
		r.Expect(f.exists(long, f.req(strconv.Itoa(longHistory+1)))).To(gomega.BeFalse(), "a request id the long history does not hold")
		r.Ev.Notef("answered per aggregate, with context, name, id and tenant each varied on its own, over a %d-stream history", longHistory)
	})

	s.It("ES-1.9", func(r *spec.R) {
		f := open(r, t)
		agg := f.aggregate("a")
		v1 := stream(agg, 1, f.req("1"))
		f.mustAppend(v1)
		r.Expect(f.append("dup-request", stream(agg, 2, f.req("1"), "E1", "E2", "E3"))).NotTo(gomega.Succeed(), "a three-event stream with a duplicate request id")
		r.Expect(f.append("dup-create", stream(agg, 1, f.req("9"), "E1", "E2", "E3"))).NotTo(gomega.Succeed(), "a three-event create of an existing aggregate")
		f.expectHistory(agg, []es.Stream{v1}, "after two rejected multi-event streams")
		r.Expect(f.exists(agg, f.req("9"))).To(gomega.BeFalse(), "the rejected stream's request id")
	})

	s.It("ES-1.10", func(r *spec.R) {
		f := open(r, t)
		agg := f.aggregate("a")
		f.mustAppend(stream(agg, 1, f.req("1")))
		f.mustAppend(stream(agg, 2, f.req("2")))
		// Each check runs whatever an earlier one found (r.Check), so one
		// run names every one that fails.
		conflicts := []struct {
			what, typ string
			err       error
		}{
			{"creation", "*es.DuplicateAggregateIDError", f.append("probe", stream(agg, 1, f.req("x")))},
			{"version", "*es.VersionConflictError", f.append("probe", stream(agg, 2, f.req("y")))},
			{"duplicate request", "*es.DuplicateRequestIDError", f.append("probe", stream(agg, 3, f.req("1")))},
		}
		for _, c := range conflicts {
			r.Check(func() {
				r.Expect(c.err).To(gomega.HaveOccurred(), "Append of a stream that makes the %s conflict must return %s", c.what, c.typ)
				r.Expect(conflictName(c.err)).NotTo(gomega.Equal("error"), "Append of a stream that makes the %s conflict must return a typed error (%s, found by errors.As), got %T: %v", c.what, c.typ, c.err, c.err)
				r.Expect(errors.Is(c.err, es.ErrConflict)).To(gomega.BeTrue(), "the %s conflict must match es.ErrConflict (errors.Is), got %T: %v", c.what, c.err, c.err)
			})
		}
		r.Check(func() {
			var vc *es.VersionConflictError
			r.Expect(errors.As(conflicts[1].err, &vc)).To(gomega.BeTrue(), "the version conflict must be an *es.VersionConflictError, got %T: %v", conflicts[1].err, conflicts[1].err)
			r.Expect([]any{vc.Aggregate, vc.Version, vc.RequestID}).To(gomega.Equal([]any{agg, 2, f.req("y")}), "the *es.VersionConflictError carries Aggregate, Version and RequestID of the rejected stream")
		})
		r.Check(func() {
			var dr *es.DuplicateRequestIDError
			r.Expect(errors.As(conflicts[2].err, &dr)).To(gomega.BeTrue(), "the duplicate-request-id conflict must be an *es.DuplicateRequestIDError, got %T: %v", conflicts[2].err, conflicts[2].err)
			r.Expect([]any{dr.Aggregate, dr.Version, dr.RequestID}).To(gomega.Equal([]any{agg, 3, f.req("1")}), "the *es.DuplicateRequestIDError carries Aggregate, Version and RequestID of the rejected stream")
		})

		// Failures that are not conflicts must not be labelled as one.
		r.Check(func() {
			cancelled, cancel := context.WithCancel(r.Context())
			cancel()
			fresh := stream(f.aggregate("cancelled"), 1, f.req("c"))
			err := f.appendWith(cancelled, f.store, "cancelled-ctx", fresh)
			r.Expect(isConflict(err)).To(gomega.BeFalse(), "Append with a cancelled context must not return a conflict (es.ErrConflict), got %v", err)
			if err == nil {
				f.expectHistory(fresh.Aggregate, []es.Stream{fresh}, "a cancelled append reported as success")
			}
		})
		closed, oerr := t.Open(r.Context())
		r.Expect(oerr).NotTo(gomega.HaveOccurred(), "opening a second handle")
		r.Expect(closed.Close()).To(gomega.Succeed(), "closing the second handle")
		// Every later call fails (es.EventStore.Close), not Append alone.
		const closedWant = "an error that is not a conflict (es.EventStore.Close; eskit.Handle returns es.ErrClosed)"
		r.Check(func() {
			err := f.appendWith(r.Context(), closed, "closed-handle", stream(agg, 3, f.req("3")))
			r.Expect(err).To(gomega.HaveOccurred(), "Append through a closed handle must return %s", closedWant)
			r.Expect(isConflict(err)).To(gomega.BeFalse(), "Append through a closed handle must return %s, got the conflict %v", closedWant, err)
		})
		r.Check(func() {
			_, err := f.loadWith(closed, "closed-handle", agg)
			r.Expect(err).To(gomega.HaveOccurred(), "Load through a closed handle must return %s", closedWant)
			r.Expect(isConflict(err)).To(gomega.BeFalse(), "Load through a closed handle must return %s, got the conflict %v", closedWant, err)
		})
		r.Check(func() {
			_, err := f.existsWith(closed, "closed-handle", agg, f.req("1"))
			r.Expect(err).To(gomega.HaveOccurred(), "RequestIDExists through a closed handle must return %s", closedWant)
			r.Expect(isConflict(err)).To(gomega.BeFalse(), "RequestIDExists through a closed handle must return %s, got the conflict %v", closedWant, err)
		})
		r.Check(func() {
			err := f.append("bad-input", es.Stream{Aggregate: agg, Version: 3, RequestID: f.req("3")})
			r.Expect(err).To(gomega.HaveOccurred(), "Append of a stream without events must return es.ErrInvalidArgument (eskit.Validate)")
			r.Expect(isConflict(err)).To(gomega.BeFalse(), "Append of a stream without events must return es.ErrInvalidArgument (eskit.Validate), not a conflict, got %v", err)
		})
	})

	s.It("ES-1.11", func(r *spec.R) {
		f := open(r, t)
		agg := f.aggregate("a")
		f.mustAppend(stream(agg, 1, f.req("1")))
		gap := stream(agg, 3, f.req("3"))
		err := f.append("client", gap)
		measured := err == nil
		r.Ev.Figure("declared: accepts tail+2", t.Caps.AcceptsVersionGap, "")
		r.Ev.Figure("measured: accepts tail+2", measured, "")
		if err != nil {
			var vc *es.VersionConflictError
			r.Expect(errors.As(err, &vc)).To(gomega.BeTrue(), "an append at tail+2 must be refused with es.VersionConflictError, got %s", said(err, 60))
		}
		if t.Caps.AcceptsVersionGap {
			r.Expect(measured).To(gomega.BeTrue(), "Caps.AcceptsVersionGap is true, but an append at tail+2 (v3 after v1) was refused")
		}
		r.Expect(measured).To(gomega.BeFalse(), "an append at tail+2 must return es.VersionConflictError (Caps.AcceptsVersionGap is false), got no error")
		r.Ev.Notef("version gap accepted: %v, as declared", measured)
	})

	s.It("ES-1.12", func(r *spec.R) {
		f := open(r, t)
		agg := f.aggregate("a")
		var all []es.Stream
		for v := 1; v <= 5; v++ {
			st := stream(agg, v, f.req(strconv.Itoa(v)))
			f.mustAppend(st)
			all = append(all, st)
		}
		got, err := f.load(agg, 2, 4)
		r.Expect(err).NotTo(gomega.HaveOccurred(), "load [2,4]")
		f.expectStreams(got, all[1:4], "load [2,4] must return versions 2, 3, 4 in order")
		got, err = f.load(agg, 4, 4)
		r.Expect(err).NotTo(gomega.HaveOccurred(), "load [4,4]")
		f.expectStreams(got, all[3:4], "load [4,4] must return version 4")
		got, err = f.load(agg, 6, 9)
		r.Expect(err).NotTo(gomega.HaveOccurred(), "load beyond the tail")
		r.Expect(len(got) == 0).To(gomega.BeTrue(), "load [6,9] beyond the tail (5) must return no streams, got %d", len(got))
		for _, rg := range [][2]int{{3, 2}, {0, 2}, {-1, 5}} {
			r.Check(func() {
				_, err := f.load(agg, rg[0], rg[1])
				r.Expect(err).To(gomega.HaveOccurred(), "Load [%d,%d] must return es.ErrInvalidArgument (eskit.ValidateRange)", rg[0], rg[1])
				r.Expect(errors.Is(err, es.ErrInvalidArgument)).To(gomega.BeTrue(), "Load [%d,%d] must return es.ErrInvalidArgument (eskit.ValidateRange), got %v", rg[0], rg[1], err)
				r.Expect(isConflict(err)).To(gomega.BeFalse(), "Load [%d,%d] must return es.ErrInvalidArgument, not a conflict, got %v", rg[0], rg[1], err)
			})
		}
	})

	s.It("ES-1.13", func(r *spec.R) {
		f := open(r, t)
		base := f.aggregate("a")
		f.mustAppend(stream(base, 1, f.req("1")))
		for _, v := range identityVariants(base) {
			st := stream(v.agg, 1, f.req("1"))
			r.Expect(f.append("client", st)).To(gomega.Succeed(), "a create of the same id under another %s with the same request id", v.field)
			f.expectHistory(v.agg, []es.Stream{st}, "the aggregate under another "+v.field)
		}
		n := len(f.history(base))
		r.Expect(n == 1).To(gomega.BeTrue(), "the original aggregate must keep its one stream, got %d", n)
	})

	// Edges and look-alikes (issue 37): edges.go and idpairs.go.
	s.It("ES-1.14", func(r *spec.R) { ruleVersionEdges(r, t) })
	s.It("ES-1.15", func(r *spec.R) { ruleDistinctIDs(r, t) })
	s.It("ES-1.16", func(r *spec.R) { ruleCutCalls(r, t) })
	// Alone: it measures the store's pace to decide whether its fill fits
	// its budget, and beside every other rule a SQLite store's one writer
	// gave it 249 appends a second instead of 2740; its fill would slow
	// theirs as much. On a store it skips, alone costs only its probe.
	s.ItAlone("ES-1.17", func(r *spec.R) { ruleLongVersions(r, t) })
	// Beside the others: 66 appends, however many events they carry.
	s.It("ES-1.18", func(r *spec.R) { ruleManyEvents(r, t) })
}

// longHistory is the length of the history the depth probes retry and
// query into: long enough that a store remembering its newest request ids
// (a window, a cache, a "latest stream" check) shows it.
const longHistory = 100

// probedVersions are the first, a middle and the last stream of it.
var probedVersions = []int{1, longHistory / 2, longHistory}

// longHistory appends versions 1..longHistory of agg, request ids req-<v>.
func (f *fixture) longHistory(agg es.AggregateID) []es.Stream {
	out := make([]es.Stream, 0, longHistory)
	for v := 1; v <= longHistory; v++ {
		st := stream(agg, v, f.req(strconv.Itoa(v)))
		f.mustAppend(st)
		out = append(out, st)
	}
	return out
}

// identityVariant is agg with one identity field changed.
type identityVariant struct {
	field string
	agg   es.AggregateID
}

// identityVariants change one field each to each of its twins
// (gen.Twins): a case variant, the other Unicode normalization form, a
// space more at either end, a tail differing past 255 characters. The
// contract counts each as another aggregate (docs/eventstore.md,
// "Identity"). Every twin, not the first only: a field drawn with an "é"
// or 256+ characters would otherwise never meet its case twin, and a
// case-folding store would pass when all four fields were drawn so.
func identityVariants(agg es.AggregateID) []identityVariant {
	var out []identityVariant
	for _, f := range []struct {
		name string
		part *string
	}{{"context", &agg.Context}, {"aggregate name", &agg.Name}, {"aggregate id", &agg.ID}, {"tenant", &agg.Tenant}} {
		orig := *f.part
		for _, tw := range gen.Twins(orig) {
			*f.part = tw[0]
			out = append(out, identityVariant{f.name + " (" + tw[1] + ")", agg})
		}
		*f.part = orig
	}
	return out
}
