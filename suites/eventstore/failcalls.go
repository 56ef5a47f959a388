package eventstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/eskit"
	"github.com/onceproof/tck/internal/spec"
)

// A cut is a context the kit ends at a point of its choosing: before the
// call (cancelled, a deadline already past) or during it (a deadline a few
// microseconds or a fraction of the call's own latency away).
type cut struct {
	name string // as a failure names it: "a cancelled context"
	make func(parent context.Context) (context.Context, context.CancelFunc)
}

// cutTimeouts are the fixed deadlines of ES-1.16; fractions of each call's
// measured latency are added to them, so a store of any pace sees deadlines
// that pass while it works.
var cutTimeouts = []time.Duration{time.Microsecond, 5 * time.Microsecond, 20 * time.Microsecond, 100 * time.Microsecond, 500 * time.Microsecond, 2 * time.Millisecond}

// cutRepeats is how often each deadline is tried per call: where it passes
// is up to the scheduler.
const cutRepeats = 3

// cutsFor are the cuts for a call that took latency with a live context.
func cutsFor(latency time.Duration) []cut {
	cuts := []cut{
		{"a cancelled context", func(p context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(p)
			cancel()
			return ctx, cancel
		}},
		{"a past deadline", func(p context.Context) (context.Context, context.CancelFunc) {
			return context.WithDeadline(p, time.Now().Add(-time.Second))
		}},
	}
	ds := append([]time.Duration(nil), cutTimeouts...)
	for _, q := range []int{4, 2} {
		if d := latency * time.Duration(q-1) / time.Duration(q); d > cutTimeouts[len(cutTimeouts)-1] {
			ds = append(ds, d)
		}
	}
	for _, d := range ds {
		for range cutRepeats {
			cuts = append(cuts, cut{"a " + d.String() + " deadline", func(p context.Context) (context.Context, context.CancelFunc) {
				return context.WithTimeout(p, d)
			}})
		}
	}
	return cuts
}

// cutTally counts one call's answers under cuts.
type cutTally struct {
	calls, errs, truths int
	during              int // the deadline passed while the call ran
}

// record counts one answer, and whether the context ended while the call
// ran (it was live when the call started and done when it returned).
func (c *cutTally) record(ctx context.Context, liveBefore bool, err error) {
	c.calls++
	if err != nil {
		c.errs++
	} else {
		c.truths++
	}
	if liveBefore && ctx.Err() != nil {
		c.during++
	}
}

// ruleCutCalls is ES-1.16.
func ruleCutCalls(r *spec.R, t target) {
	f := open(r, t)
	agg := f.aggregate("stored")
	// A stored history, read back before any cut: every answer under a cut
	// is judged against what the kit knows is there.
	var want []es.Stream
	for v := 1; v <= 12; v++ {
		s := stream(agg, v, f.req("s"+strconv.Itoa(v)), "E1", "E2")
		f.mustAppend(s)
		want = append(want, s)
	}
	f.expectHistory(agg, want, "before the cuts")
	probes := []int{0, 5, 11} // the first, a middle and the last stream
	for _, i := range probes {
		r.Expect(f.exists(agg, want[i].RequestID)).To(gomega.BeTrue(), "RequestIDExists must find the request id stored at version %d (a live context)", want[i].Version)
	}
	never := f.req("never")
	tallies := map[string]*cutTally{}
	ops := []string{"exists?", "load", "append", "append a stored request id"}
	for _, op := range ops {
		tallies[op] = &cutTally{}
	}

	r.Check(func() {
		for _, i := range probes {
			id, v := want[i].RequestID, want[i].Version
			var ok bool
			f.cutEach(tallies["exists?"], "exists?", "req="+short(id), func(ctx context.Context, h es.EventStore) (string, error) {
				var err error
				ok, err = h.RequestIDExists(ctx, agg, id)
				return fmt.Sprint(ok), err
			}, func(c string, err error) {
				r.Expect(err != nil || ok).To(gomega.BeTrue(), "RequestIDExists(%s) under %s: false, nil for a request id stored at v%d", tiny(id), c, v)
			})
		}
		var ok bool
		f.cutEach(tallies["exists?"], "exists?", "req="+short(never), func(ctx context.Context, h es.EventStore) (string, error) {
			var err error
			ok, err = h.RequestIDExists(ctx, agg, never)
			return fmt.Sprint(ok), err
		}, func(c string, err error) {
			r.Expect(err != nil || !ok).To(gomega.BeTrue(), "RequestIDExists(%s) under %s: true, nil for a request id never stored", tiny(never), c)
		})
	})
	r.Check(func() {
		for _, rg := range [][2]int{{es.InitialVersion, eskit.MaxVersion}, {4, 9}} {
			from, to := rg[0], rg[1]
			wantRange := want[from-1 : min(to, len(want))]
			var got []es.Stream
			f.cutEach(tallies["load"], "load", fmt.Sprintf("%s [%d,%d]", short(agg.ID), from, to), func(ctx context.Context, h es.EventStore) (string, error) {
				var err error
				got, err = h.Load(ctx, agg, from, to)
				return fmt.Sprintf("%d streams", len(got)), err
			}, func(c string, err error) {
				if err != nil {
					return
				}
				_, diff := diffStreams(got, wantRange)
				r.Expect(len(got) == len(wantRange)).To(gomega.BeTrue(), "Load(%d, %d) under %s said %d of %d streams, no error", from, to, c, len(got), len(wantRange))
				r.Expect(diff == "").To(gomega.BeTrue(), "Load(%d, %d) under %s, no error, differs from the stored streams: %s", from, to, c, diff)
			})
		}
	})
	if r.Failed() {
		return
	}

	// Appends under cuts, each read back with a live context: a nil answer
	// must be stored; an error may or may not be (it is indeterminate, and
	// may land after its own read-back: a driver adapter goes on with a
	// request its caller gave up on), but only whole, at a free version.
	tried := map[string]es.Stream{} // the cut appends, by command id
	dupID := want[0].RequestID
	judge := func(s es.Stream, c string, err error, dup bool) {
		tried[s.CommandID] = s
		got, lerr := f.load(agg, es.InitialVersion, eskit.MaxVersion)
		if lerr != nil {
			r.Unknown("reading back the append at version %d under %s with a live context failed (%s): whether it was stored was not reached", s.Version, c, said(lerr, 80))
		}
		_, kept := diffStreams(got[:min(len(got), len(want))], want)
		r.Expect(len(got) >= len(want) && kept == "").To(gomega.BeTrue(), "after Append(v%d) under %s (%s) the history lost or changed what was stored: %s", s.Version, c, said(err, 40), kept)
		stored := false
		for _, g := range got[len(want):] {
			a, ok := tried[g.CommandID]
			_, diff := diffStreams([]es.Stream{g}, []es.Stream{a})
			r.Expect(ok && diff == "").To(gomega.BeTrue(), "after Append(v%d) under %s (%s) the history holds v%d, which is no stream the rule appended whole: %s", s.Version, c, said(err, 40), g.Version, diff)
			if g.RequestID == dupID {
				r.Expect(false).To(gomega.BeTrue(), "Append(%s) under %s: %s, stored twice; want es.DuplicateRequestIDError", tiny(dupID), c, said(err, 20))
			}
			stored = stored || g.CommandID == s.CommandID
		}
		switch {
		case err == nil && dup && !stored:
			r.Expect(false).To(gomega.BeTrue(), "Append(%s) under %s: no error for a stored request id; want es.DuplicateRequestIDError", tiny(dupID), c)
		case err == nil && !stored:
			r.Expect(false).To(gomega.BeTrue(), "Append(v%d) under %s said no error but did not store the stream (read back with a live context)", s.Version, c)
		}
		want = got
	}
	n := 0
	r.Check(func() {
		var s es.Stream
		f.cutEach(tallies["append"], "append", "a new stream at the next version", func(ctx context.Context, h es.EventStore) (string, error) {
			n++
			s = stream(agg, len(want)+1, f.req("cut")+"-"+strconv.Itoa(n), "E1", "E2")
			return describe(s), h.Append(ctx, s)
		}, func(c string, err error) { judge(s, c, err, false) })
	})
	if r.Failed() {
		return
	}
	// The store's own request-id check, under a context that ends: a check
	// that failed must not let the insert through.
	r.Check(func() {
		var s es.Stream
		f.cutEach(tallies["append a stored request id"], "append", "req="+short(dupID)+" again at the next version", func(ctx context.Context, h es.EventStore) (string, error) {
			s = stream(agg, len(want)+1, dupID, "E1", "E2")
			return describe(s), h.Append(ctx, s)
		}, func(c string, err error) { judge(s, c, err, true) })
	})
	for _, op := range ops {
		c := tallies[op]
		r.Ev.Figure(op+" calls under a cut (errors, true answers)", fmt.Sprintf("%d (%d, %d)", c.calls, c.errs, c.truths), "")
		r.Ev.Figure(op+" calls whose deadline passed while they ran", c.during, "")
	}
	if r.Failed() {
		return
	}
	calls, during := 0, 0
	for _, c := range tallies {
		calls, during = calls+c.calls, during+c.during
	}
	r.Ev.Notef("RequestIDExists, Load and Append on a stored aggregate, %d calls under a cancelled context, a deadline already past and deadlines from 1µs to a fraction of each call's latency (%d passed while the call ran): every answer was an error or the truth; every append that returned nil was stored, none of a stored request id was", calls, during)
}

// cutEach makes one call under a live context (which sizes the cuts to
// its latency) and then under each cut, on the handles in turn, each call
// on the timeline; judge sees each answer (c names the cut).
func (f *fixture) cutEach(tally *cutTally, op, detail string, do func(ctx context.Context, h es.EventStore) (string, error), judge func(c string, err error)) {
	one := func(ctx context.Context, name string) (time.Duration, error) {
		h, at := f.via()
		rec := f.rec.Invoke("cutter"+at, op, detail+" under "+name)
		start := time.Now()
		got, err := do(ctx, h)
		took := time.Since(start)
		if err != nil {
			rec.Info(err.Error())
		} else {
			rec.OK(got)
		}
		return took, err
	}
	latency, err := one(f.ctx, "a live context")
	judge("a live context", err)
	for _, c := range cutsFor(latency) {
		ctx, cancel := c.make(f.ctx)
		live := ctx.Err() == nil
		_, err := one(ctx, c.name)
		tally.record(ctx, live, err)
		cancel()
		judge(c.name, err)
	}
}

// tiny quotes an id for a first line that also names a call and a cut: its
// first 12 characters (the timeline and the figures have it whole).
func tiny(id string) string {
	if r := []rune(id); len(r) > 14 {
		id = string(r[:12]) + "…"
	}
	return strconv.Quote(id)
}
