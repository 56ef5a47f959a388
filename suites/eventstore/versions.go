package eventstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/eskit"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/stall"
)

// The versions ES-1.17 grows one aggregate past: a stream is one version
// however many events it carries (es.Stream), so each version is one
// append. 2^15 is a signed 16-bit column's first version out of range,
// 2^16 an unsigned 16-bit counter's wrap.
const (
	edge15      = 1 << 15
	edge16      = 1 << 16
	versionsAim = edge16 + 4
	// The fill's budget of the kit's scheduled time by default: 65540
	// appends take ~30 s on SQLite alone, minutes on a networked database,
	// and the default run may not grow by that (it is ~13 s on two quiet
	// cores). A store that cannot reach the aim in it is skipped with the
	// time it would need; a longer Target.Timeout (its share) or MaxWait
	// buys that time.
	versionsFill = 5 * time.Second
	// The fill's share of a longer Target.Timeout and of the rule's
	// deadline; the loads and edge checks after it take the rest.
	versionsShare = 75
	// The pace is measured once at least versionsProbe appends and
	// versionsProbeTime of scheduled time have passed (or versionsProbeMax
	// appends: a fast store is not held to the time): a slow store costs
	// the probe and no more when it is skipped.
	versionsProbe     = 64
	versionsProbeTime = 300 * time.Millisecond
	versionsProbeMax  = 8192
	// The fill runs on past its budget (a pace that dropped, a starved
	// kit) up to this many budgets of scheduled time, then ends unknown.
	versionsOver  = 2
	versionsChunk = 4096
)

// versionEdges are the versions after whose append the rule checks the
// conflicts at the tail, and around which it loads ranges.
var versionEdges = []int{edge15 - 1, edge15, edge16 - 1, edge16, edge16 + 1}

// versionsBudget is ES-1.17's fill budget for t: versionsFill, or the
// author's longer Timeout (its share) or MaxWait.
func versionsBudget(t target) time.Duration {
	b := versionsFill
	if t.Timeout > spec.DefaultTimeout {
		b = max(b, t.Timeout*versionsShare/100)
	}
	return max(b, t.MaxWait)
}

// ruleLongVersions is ES-1.17.
func ruleLongVersions(r *spec.R, t target) {
	r.DeferCleanup(stall.Hold())
	f := open(r, t)
	agg := f.aggregate("long")
	base := f.req("v")
	hs := f.handles()
	start := time.Now()
	budget := versionsBudget(t)
	if dl, ok := r.Context().Deadline(); ok {
		budget = min(budget, time.Until(dl)*versionsShare/100)
	}
	r.Ev.Figure("fill budget", budget.Milliseconds(), "ms")
	streams := make([]es.Stream, 0, versionsAim)
	next := func(v int) es.Stream {
		s := es.Stream{Aggregate: agg, Version: v, RequestID: base + "-" + strconv.Itoa(v), CommandID: "cmd-" + nonce(),
			Events: []es.Event{{Name: "V", Body: []byte(strconv.Itoa(v))}}}
		if v >= edge15-2 && v <= edge15+2 || v >= edge16-2 && v <= edge16+2 {
			s.Events = append(s.Events, es.Event{Name: "W", Body: []byte(`{"edge":` + strconv.Itoa(v) + `}`)})
		}
		return s
	}
	var rate float64 // appends per second of scheduled time, measured over the first ones
	stopped := ""    // why the fill ended short of the aim
	chunkFrom, chunkStart := 1, time.Now()
	for v := 1; v <= versionsAim; v++ {
		s := next(v)
		err := hs[v%len(hs)].Append(f.ctx, s)
		if err != nil && !isConflict(err) && f.ctx.Err() == nil {
			err = f.settle(s, err)
		}
		if err != nil {
			if f.ctx.Err() != nil {
				stopped = fmt.Sprintf("the rule's deadline came at version %d", v-1)
				break
			}
			edge := v == edge15 || v == edge16 || v == edge15+1 || v == edge16+1
			if isConflict(err) || edge {
				f.rec.Invoke("filler", "append", describe(s)).Complete(classify(err))
				r.Expect(err == nil).To(gomega.BeTrue(), "Append(v%d) after v%d was stored: %s; versions must go on past %d", v, v-1, said(err, 60), versionEdge(v))
			}
			f.rec.Invoke("filler", "append", describe(s)).Complete(classify(err))
			r.Unknown("Append(v%d) failed twice with %s: versions past %d were not reached", v, said(err, 80), v-1)
		}
		streams = append(streams, s)
		if v-chunkFrom+1 == versionsChunk || v == versionsAim {
			f.rec.Invoke("filler", "append", fmt.Sprintf("v%d..v%d (%d appends, one each, the handles in turn)", chunkFrom, v, v-chunkFrom+1)).OK(fmt.Sprintf("stored in %s", time.Since(chunkStart).Round(time.Millisecond)))
			chunkFrom, chunkStart = v+1, time.Now()
		}
		for _, e := range versionEdges[:4] {
			if v == e {
				f.tailConflicts(r, t, agg, v, base)
			}
		}
		if r.Failed() {
			return
		}
		if v%versionsProbe != 0 {
			continue
		}
		if v%256 == 0 {
			r.Progress(v, versionsAim, "versions")
		}
		now := time.Now()
		sched := stall.Scheduled(start, now)
		if rate == 0 && (v >= versionsProbe && sched >= versionsProbeTime || v >= versionsProbeMax) {
			rate = float64(v) / max(sched, time.Millisecond).Seconds()
			need := sched + time.Duration(float64(versionsAim-v)/rate*float64(time.Second))
			if need > budget {
				// Decided before the aggregate grows any further: the
				// store is no worse for it, the run no longer.
				f.rec.Invoke("filler", "append", fmt.Sprintf("v%d..v%d (the probe)", chunkFrom, v)).OK(fmt.Sprintf("stored in %s", time.Since(chunkStart).Round(time.Millisecond)))
				r.Ev.Figure("version reached (aimed at)", fmt.Sprintf("%d (%d)", v, versionsAim), "")
				r.Ev.Figure("appends per second", int(rate), "")
				r.Ev.Figure("fill time needed", need.Milliseconds(), "ms")
				skipForPace(r, fmt.Sprintf("%.0f appends/s over the first %d", rate, v), fmt.Sprintf("the %d appends past 2^16", versionsAim), need, budget)
			}
		}
		if sched >= versionsOver*budget || now.Sub(start) >= 3*versionsOver*budget {
			stopped = fmt.Sprintf("the fill ran past %d times its budget of %s at version %d (the kit was late %s of %s)", versionsOver, budget.Round(time.Second), v, stall.Since(start).Total.Round(time.Millisecond), now.Sub(start).Round(time.Millisecond))
			break
		}
	}
	reached := len(streams)
	elapsed := time.Since(start)
	if f.ctx.Err() != nil {
		r.Unknown("the rule's deadline came at version %d (the kit was late %s of %s): the loads and checks after the fill were not reached", reached, stall.Since(start).Total.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	}
	if sched := stall.Scheduled(start, time.Now()); rate == 0 && sched > 0 {
		rate = float64(reached) / sched.Seconds()
	}
	r.Ev.Figure("version reached (aimed at)", fmt.Sprintf("%d (%d)", reached, versionsAim), "")
	r.Ev.Figure("appends per second", int(rate), "")
	r.Ev.Figure("fill time", elapsed.Milliseconds(), "ms")

	// The history as stored: every version once, in order, each stream the
	// one appended; ranges around the edges reached.
	r.Check(func() {
		got, err := f.load(agg, es.InitialVersion, eskit.MaxVersion)
		if err != nil {
			r.Unknown("loading the %d versions back failed (%s): the history was not checked", reached, said(err, 80))
		}
		for i, s := range got {
			if s.Version != i+1 {
				r.Expect(s.Version == i+1).To(gomega.BeTrue(), "Load(1, max) of %d versions: stream %d has version %d, want %d (versions must increase by exactly one past %d)", reached, i+1, s.Version, i+1, versionEdge(i+1))
			}
		}
		f.expectStreams(got, streams, fmt.Sprintf("Load(1, max) after %d appends", reached))
	})
	r.Check(func() {
		for _, e := range versionEdges {
			for _, rg := range [][2]int{{e, e}, {e - 2, e + 2}} {
				from, to := rg[0], min(rg[1], reached)
				if from > reached {
					continue
				}
				got, err := f.load(agg, from, to)
				if err != nil {
					r.Unknown("Load(%d, %d) failed (%s): the range was not checked", from, to, said(err, 80))
				}
				r.Expect(len(got) == to-from+1).To(gomega.BeTrue(), "Load(%d, %d) said %d streams, want %d (versions past %d)", from, to, len(got), to-from+1, versionEdge(to))
				f.expectStreams(got, streams[from-1:to], fmt.Sprintf("Load(%d, %d)", from, to))
			}
		}
	})
	r.Check(func() {
		// A request id stored at an edge, again at the next version: the
		// duplicate-request-id conflict, typed, with the version asked.
		for _, e := range []int{edge15, edge16} {
			if e > reached {
				continue
			}
			id := streams[e-1].RequestID
			r.Expect(f.exists(agg, id)).To(gomega.BeTrue(), "RequestIDExists of the request id stored at v%d: false", e)
			s := stream(agg, reached+1, id)
			err := f.append("client", s)
			var dr *es.DuplicateRequestIDError
			r.Expect(errors.As(err, &dr) && dr.Version == s.Version && dr.RequestID == id).To(gomega.BeTrue(), "Append(v%d) of the request id stored at v%d must return es.DuplicateRequestIDError{Version: %d}, got %s", s.Version, e, s.Version, versionOf(err))
		}
	})
	if r.Failed() {
		return
	}
	if reached < versionsAim {
		r.Unknown("versions past %d were not reached (%s); those reached went up by one and loaded back whole", reached, stopped)
	}
	r.Ev.Notef("one aggregate grew to version %d in %d appends (%.0f/s): versions increased by exactly one past %d and %d, loads of ranges around 32767, 32768, 65535, 65536 and 65537 returned those streams, the version and request-id conflicts at the edges were typed with the version asked", reached, reached, rate, edge15-1, edge16-1)
}

// versionsTimeoutFor is the Target.Timeout whose share is a fill of need,
// with a margin for a pace that varies; at least 2 minutes, as a Timeout
// of 60 s or less leaves the fill its default budget.
// skipForPace skips a volume rule whose work the store's measured pace
// cannot finish within its budget, naming the figures and the settings
// that would run it. One decision for ES-1.17 and ES-1.18.
func skipForPace(r *spec.R, pace, work string, need, budget time.Duration) {
	r.Ev.Figure(spec.ShortOfPace, fmt.Sprintf("%s at %s need %s, the budget is %s", work, pace, need.Round(time.Second), budget.Round(time.Second)), "")
	r.Skipped("at the store's pace (%s) %s need about %s, over the budget of %s: not run (a Target.Timeout of %s, or tck run --max-wait %s, runs it)",
		pace, work, need.Round(time.Second), budget.Round(time.Second), versionsTimeoutFor(need), (need * 5 / 4).Round(time.Second))
}

func versionsTimeoutFor(need time.Duration) time.Duration {
	return max(2*time.Minute, (need*5/4*100/versionsShare).Round(time.Minute)+time.Minute)
}

// versionEdge is the 16-bit edge a version is past.
func versionEdge(v int) int {
	if v > edge16-1 {
		return edge16 - 1
	}
	return edge15 - 1
}

// versionOf names an error and, for a typed conflict, its version.
func versionOf(err error) string {
	var dr *es.DuplicateRequestIDError
	var vc *es.VersionConflictError
	switch {
	case errors.As(err, &dr):
		return fmt.Sprintf("es.DuplicateRequestIDError{Version: %d}", dr.Version)
	case errors.As(err, &vc):
		return fmt.Sprintf("es.VersionConflictError{Version: %d}", vc.Version)
	}
	return said(err, 60)
}

// tailConflicts checks, with the tail at v, that the version taken and
// (without declared gaps) tail+2 are version conflicts carrying the
// version asked, and that nothing of them is stored.
func (f *fixture) tailConflicts(r *spec.R, t target, agg es.AggregateID, v int, base string) {
	asks := []int{v}
	if !t.Caps.AcceptsVersionGap {
		asks = append(asks, v+2)
	}
	r.Check(func() {
		for _, at := range asks {
			s := stream(agg, at, base+"-edge-"+strconv.Itoa(at)+"-"+nonce())
			err := f.append("client", s)
			var vc *es.VersionConflictError
			r.Expect(errors.As(err, &vc) && vc.Version == at).To(gomega.BeTrue(), "Append(v%d) at tail v%d must return es.VersionConflictError{Version: %d}, got %s", at, v, at, versionOf(err))
		}
	})
}

// settle decides an append that failed with an error that is not a
// conflict: stored after all (the version reads back with its request
// id), or tried once more. It returns the error that stands (nil: stored).
func (f *fixture) settle(s es.Stream, err error) error {
	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	got, lerr := f.store.Load(ctx, s.Aggregate, s.Version, s.Version)
	if lerr == nil && len(got) == 1 && got[0].RequestID == s.RequestID {
		return nil
	}
	again := f.store.Append(ctx, s)
	var dr *es.DuplicateRequestIDError
	if errors.As(again, &dr) {
		return nil // the first was stored after all, or the retry was
	}
	return again
}
