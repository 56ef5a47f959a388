package eventstore

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/gen"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/stall"
)

// ES-4.3 reaches back far in request ids and in time. A request id is
// unique per aggregate for ever, but a store that keeps it unique with a
// bounded memory in front of the write (a cache with a time to live, an LRU
// of some thousand ids, no unique constraint) passes every check that comes
// soon after the write or after a few thousand ids. So the rule stores as
// many streams with distinct request ids as the store takes in a time
// budget, on several aggregates and handles at once, lets seconds pass
// (counted in time the kit was scheduled, package stall), stores more
// distinct ids, and only then retries the oldest ids and a random sample of
// all of them, each at its aggregate's next version with a new command id,
// through the old handles and fresh ones: every retry must be refused with
// the typed duplicate-request-id conflict, every query must say the id is
// there, and every aggregate loads back with each stream once.
//
// Its size is measured, not fixed: the early fill stops at its count or at
// its time budget, and the late fill is sized from the rate the early one
// measured, so a slow store (PostgreSQL over a network, a driver adapter)
// still finishes; the evidence states the counts reached and what they rule
// out.

const (
	// reachHorizon is the default age of the oldest request ids at their
	// retry (tck run --max-wait longer): past the time to live of a cache
	// that forgets after a few seconds.
	reachHorizon = 5500 * time.Millisecond
	// reachAggregates aggregates are written at once, one writer each, the
	// writers spread over the handles.
	reachAggregates = 6
	reachHandles    = 3
	reachFresh      = 2 // handles opened just before the retries
	// reachEarlyIDs and reachIDs are the counts aimed at: the early fill
	// stops at reachEarlyIDs, the late one brings the total to reachIDs,
	// an LRU of 16000 ids overrun by half, each within its time budget.
	reachEarlyIDs = 16000
	reachIDs      = 24000
	reachEarlyFor = 3000 * time.Millisecond // the early fill's time budget at most
	reachLateFor  = 1500 * time.Millisecond // the late fill's
	// The retries: the store's oldest request ids, a random sample of all
	// of them, and request ids the aggregate never stored (another
	// aggregate's, or one not reached), which the query must deny.
	reachOldest = 32
	reachSample = 32
	reachUnused = 8
	// Below both of these the rule reached nothing ES-4.1 does not: it is
	// unknown.
	reachLeastAge = genHorizon
	reachLeastIDs = genBursts * genBurstSize
)

// reachStored is one stored stream of the fill and when its append
// returned: it was stored by then.
type reachStored struct {
	s  es.Stream
	at time.Time
}

// reachAgg is one aggregate of the rule and its model: the streams the
// store accepted, in version order.
type reachAgg struct {
	id      es.AggregateID
	streams []reachStored
	filled  int // streams the fills stored, before the retries
}

// reachReq is the request id of writer w's seq-th stream: one of the rule's
// drawn request ids (every class but the long one) with the writer and the
// sequence number after its first character, so that no two are equal and
// leading and trailing spaces stay where they are.
func reachReq(bases []string, w, seq int) string {
	b := bases[seq%len(bases)]
	_, n := utf8.DecodeRuneInString(b)
	return b[:n] + "r" + strconv.Itoa(w) + "." + strconv.Itoa(seq) + "-" + b[n:]
}

// reachFill is one fill: writers on the aggregates, until n more streams
// are stored or budget has passed.
type reachFill struct {
	aggs    []*reachAgg
	handles []es.EventStore
	bases   []string
	bodies  [][]byte
}

// run stores up to n streams with fresh request ids, one writer per
// aggregate, for budget of the time the kit was scheduled (a loaded host
// or a paused kit does not cut the fill short; three times budget on the
// clock at most); it returns how many it stored, a violation ("" for none)
// and a failure that decides nothing (an error that is not a conflict, the
// rule's deadline).
func (fl *reachFill) run(ctx context.Context, n int, budget time.Duration, progress func(int)) (int, string, error) {
	var (
		claimed atomic.Int64
		stored  atomic.Int64
		mu      sync.Mutex
		v       string
		setup   error
		wg      sync.WaitGroup
	)
	start := time.Now()
	var over atomic.Bool // the budget is spent
	stop := func() bool {
		if over.Load() {
			return true
		}
		if now := time.Now(); now.Sub(start) >= budget && (stall.Scheduled(start, now) >= budget || now.Sub(start) >= 3*budget) {
			over.Store(true)
			return true
		}
		mu.Lock()
		defer mu.Unlock()
		return v != "" || setup != nil || ctx.Err() != nil
	}
	for w, a := range fl.aggs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := fl.handles[w%len(fl.handles)]
			for !stop() && claimed.Add(1) <= int64(n) {
				seq := len(a.streams) + 1
				s := es.Stream{Aggregate: a.id, Version: seq, RequestID: reachReq(fl.bases, w, seq), CommandID: "cmd-" + nonce(),
					Events: []es.Event{{Name: "Reached", Body: fl.bodies[seq%len(fl.bodies)]}}}
				err := h.Append(ctx, s)
				at := time.Now()
				switch {
				case err == nil:
					a.streams = append(a.streams, reachStored{s, at})
					if k := stored.Add(1); progress != nil && k%500 == 0 {
						progress(int(k))
					}
					continue
				case isConflict(err):
					mu.Lock()
					if v == "" {
						v = fmt.Sprintf("the append of %s through handle %d, a request id never used at the aggregate's next version, was refused with %s: %v", describe(s), w%len(fl.handles)+1, conflictName(err), err)
					}
					mu.Unlock()
				default:
					mu.Lock()
					if setup == nil {
						setup = fmt.Errorf("the append of %s through handle %d failed with %v (not a typed conflict)", describe(s), w%len(fl.handles)+1, err)
					}
					mu.Unlock()
				}
				return
			}
		}()
	}
	wg.Wait()
	if setup == nil && v == "" && ctx.Err() != nil {
		setup = fmt.Errorf("the rule's deadline: %w", ctx.Err())
	}
	return int(stored.Load()), v, setup
}

// waitScheduled waits until the kit has been scheduled for d since from,
// or until the clock reaches limit; it says whether d was reached.
func waitScheduled(ctx context.Context, from time.Time, d time.Duration, limit time.Time) bool {
	for {
		left := d - stall.Scheduled(from, time.Now())
		if left <= 0 {
			return true
		}
		if until := time.Until(limit); until <= 0 || ctx.Err() != nil {
			return false
		} else if left > until {
			left = until
		}
		t := time.NewTimer(min(left, 100*time.Millisecond))
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// reachProbe is one sampled stream and what the rule saw of it.
type reachProbe struct {
	agg   *reachAgg
	i     int // its index in the aggregate's model
	rank  int // its place in the store-wide order, oldest first
	which string
}

func registerReach(s *spec.Set, t target) {
	s.It("ES-4.3", func(r *spec.R) {
		r.DeferCleanup(stall.Hold())
		f := open(r, t)
		ctx := r.Context()
		start := time.Now()
		src := f.source()
		rnd := src.Rand()

		// The fills, the wait and the retries within the rule's deadline
		// (its context may not carry it: the set's timeout then), the last
		// third of it for the retries and the final loads.
		horizon := gen.Horizon(reachHorizon, t.MaxWait)
		left := spec.DefaultTimeout
		if t.Timeout > 0 {
			left = t.Timeout
		}
		if dl, ok := ctx.Deadline(); ok {
			left = min(left, time.Until(dl))
		}
		if left/2 < horizon {
			r.Ev.Notef("the horizon is cut from %s to %s, half the rule's deadline", horizon.Round(time.Millisecond), (left / 2).Round(time.Millisecond))
			horizon = left / 2
		}
		waitCap := start.Add(left * 2 / 3)
		earlyFor := min(reachEarlyFor, horizon*55/100)
		lateFor := min(reachLateFor, horizon*27/100)

		// The handles: the fixture's, and more, as service instances over
		// one database.
		handles := f.handles()
		if t.OneHandle != "" {
			r.Ev.Notef("one handle only (%s): the fills, the retries and the queries share it; a check cached per handle is not reached", t.OneHandle)
		} else {
			for len(handles) < reachHandles {
				h, err := t.Open(ctx)
				r.Expect(err).NotTo(gomega.HaveOccurred(), "opening handle %d on the store", len(handles)+1)
				f.more = append(f.more, h)
				handles = f.handles()
			}
		}

		// The values, all from the seed: the aggregates (the rule's drawn
		// identity), request ids of every class but the long one (24000
		// keys of 300 characters would slow every database's index, and
		// ES-4.1 writes long request ids), small bodies of every class.
		var bases []string
		for len(bases) < 8 {
			if x := gen.Draw(src, gen.ID(gen.IDOptions{})); x.Class != gen.ClassLong {
				bases = append(bases, x.S)
			}
		}
		var bodies [][]byte
		for range 8 {
			bodies = append(bodies, gen.Draw(src, gen.Body(false)).B)
		}
		aggs := make([]*reachAgg, reachAggregates)
		for w := range aggs {
			aggs[w] = &reachAgg{id: f.aggregate("reach" + strconv.Itoa(w))}
		}
		fill := &reachFill{aggs: aggs, handles: handles, bases: bases, bodies: bodies}
		total := func() int {
			n := 0
			for _, a := range aggs {
				n += len(a.streams)
			}
			return n
		}
		progress := func(k int) { r.Progress(k, reachIDs, "request ids stored") }
		r.Ev.Figure("seed", f.seed, "")
		r.Ev.Figure("aggregates (one writer each)", reachAggregates, "")
		r.Ev.Figure("time horizon aimed at (the oldest request ids' age at their retry)", horizon.Milliseconds(), "ms")

		// The early fill, as fast as the store takes it.
		call := f.rec.Invoke("writers", "append", fmt.Sprintf("early fill: up to %d fresh request ids on %d aggregates through %d handles, for up to %s", reachEarlyIDs, reachAggregates, len(handles), earlyFor))
		t0 := time.Now()
		early, v, setup := fill.run(ctx, reachEarlyIDs, earlyFor, progress)
		earlyTook := time.Since(t0)
		call.OK(fmt.Sprintf("%d stored in %s", early, earlyTook.Round(time.Millisecond)))
		if v == "" && setup == nil && early == 0 {
			setup = fmt.Errorf("the early fill stored nothing in %s", earlyTook.Round(time.Millisecond))
		}
		r.Ev.Figure("request ids stored early (before the wait)", early, "")
		reachEnd(r, f, v, setup)
		rate := float64(early) / max(earlyTook.Seconds(), 1e-3)
		r.Ev.Figure("append rate measured (the early fill, all writers)", math.Round(rate), "streams/s")

		// The oldest stream is the first to return.
		var oldestAt time.Time
		for _, a := range aggs {
			if len(a.streams) > 0 && (oldestAt.IsZero() || a.streams[0].at.Before(oldestAt)) {
				oldestAt = a.streams[0].at
			}
		}

		// The late fill, sized from the measured rate, ending about when
		// the oldest ids reach the horizon.
		late := min(reachIDs-early, int(rate*lateFor.Seconds()))
		lateTakes := time.Duration(float64(late) / rate * float64(time.Second))
		f.rec.Note("schedule", "wait", fmt.Sprintf("until the oldest request id is %s old, less the late fill's %s", horizon.Round(time.Millisecond), lateTakes.Round(time.Millisecond)), "")
		waitScheduled(ctx, oldestAt, horizon-lateTakes, waitCap)
		if late > 0 {
			// Until the oldest ids reach the horizon, should the store slow
			// down: the retries are not put off.
			budget := min(lateFor*3/2, max(horizon-stall.Scheduled(oldestAt, time.Now()), lateFor/4))
			call = f.rec.Invoke("writers", "append", fmt.Sprintf("late fill: %d more fresh request ids (sized from %.0f streams/s), for up to %s", late, rate, budget.Round(time.Millisecond)))
			t1 := time.Now()
			var n int
			n, v, setup = fill.run(ctx, late, budget, func(k int) { progress(early + k) })
			call.OK(fmt.Sprintf("%d stored in %s", n, time.Since(t1).Round(time.Millisecond)))
			r.Ev.Figure("request ids stored late (after the wait)", n, "")
			reachEnd(r, f, v, setup)
		}
		stored := total()
		for _, a := range aggs {
			a.filled = len(a.streams)
		}
		r.Ev.Figure("request ids stored", stored, "")
		f.rec.Note("schedule", "wait", "until the oldest request id is "+horizon.Round(time.Millisecond).String()+" old (time the kit was scheduled)", "")
		reached := waitScheduled(ctx, oldestAt, horizon, waitCap)

		// The store-wide order, oldest first: what a cache or a time to
		// live forgets first.
		var order []reachProbe
		for _, a := range aggs {
			for i := range a.streams {
				order = append(order, reachProbe{agg: a, i: i})
			}
		}
		slices.SortStableFunc(order, func(x, y reachProbe) int { return x.agg.streams[x.i].at.Compare(y.agg.streams[y.i].at) })
		for k := range order {
			order[k].rank = k
		}
		var probes []reachProbe
		for k := range min(reachOldest, len(order)) {
			p := order[k]
			p.which = fmt.Sprintf("the store's %s oldest request id", ordinal(k+1))
			probes = append(probes, p)
		}
		if len(order) > reachOldest {
			// Positions drawn from the seed, as fractions of what was
			// stored: the same seed samples the same places.
			seen := map[int]bool{}
			for range reachSample {
				k := reachOldest + int(rnd.Float64()*float64(len(order)-reachOldest))
				if seen[k] {
					continue
				}
				seen[k] = true
				p := order[k]
				p.which = fmt.Sprintf("a random request id (the %s stored)", ordinal(k+1))
				probes = append(probes, p)
			}
		}

		// Fresh handles, opened now: nothing cached in them.
		retryHandles := handles
		names := make([]string, len(handles))
		for i := range handles {
			names[i] = fmt.Sprintf("h%d", i+1)
		}
		if t.OneHandle == "" {
			for k := range reachFresh {
				h, err := t.Open(ctx)
				r.Expect(err).NotTo(gomega.HaveOccurred(), "opening a fresh handle on the store")
				f.more = append(f.more, h)
				retryHandles = append(slices.Clone(retryHandles), h)
				names = append(names, fmt.Sprintf("h%d (fresh)", len(handles)+k+1))
			}
		}
		r.Ev.Figure("instances (handles on one store)", len(retryHandles), "")

		// The retries, oldest first: each sampled request id queried and
		// appended again at its aggregate's next version, through two
		// different handles, a fresh one every other time.
		// Every check counted; the first refused retry that was not, else
		// the first failed check, heads the failure.
		var violations []string
		checks, headline, headRetry := 0, -1, false
		violate := func(retry bool, msg string) {
			if headline < 0 || retry && !headRetry {
				headline, headRetry = len(violations), retry
			}
			violations = append(violations, msg)
		}
		first := func() string {
			switch len(violations) {
			case 0:
				return ""
			case 1:
				return violations[0]
			}
			return fmt.Sprintf("%s (and %d more failed checks)", violations[headline], len(violations)-1)
		}
		firstRetry := time.Now()
		oldestAge, oldestAfter, aggAfter := time.Duration(0), 0, 0
		for j, p := range probes {
			old := p.agg.streams[p.i]
			after := len(order) - 1 - p.rank // stored after it, before its retry
			qh, ah := j%len(retryHandles), (j+1)%len(retryHandles)
			if len(retryHandles) > len(handles) && j%2 == 0 {
				ah = len(handles) + (j/2)%(len(retryHandles)-len(handles))
			}
			if qh == ah {
				qh = (qh + 1) % len(retryHandles)
			}
			age := func() time.Duration { return stall.Scheduled(old.at, time.Now()) }
			if j == 0 {
				oldestAge, oldestAfter = age(), after
			}
			aggAfter = max(aggAfter, p.agg.filled-1-p.i) // stored after it on its aggregate
			// Its age counts the time the kit was scheduled.
			about := func(what string) string {
				return fmt.Sprintf("request id %s, %.1f s old with %d request ids stored after it: %s (%s, aggregate %s)", short(old.s.RequestID), age().Seconds(), after, what, p.which, short(p.agg.id.ID))
			}
			c := f.rec.Invoke("checker@"+names[qh], "exists?", short(old.s.RequestID)+" ("+p.which+")")
			ok, err := retryHandles[qh].RequestIDExists(ctx, p.agg.id, old.s.RequestID)
			if err != nil {
				c.Info(err.Error())
				reachEnd(r, f, first(), fmt.Errorf("RequestIDExists of %s through %s failed: %w", short(old.s.RequestID), names[qh], err))
			}
			c.OK(strconv.FormatBool(ok))
			if checks++; !ok {
				violate(false, about(fmt.Sprintf("RequestIDExists through %s said false", names[qh])))
			}
			retry := es.Stream{Aggregate: p.agg.id, Version: len(p.agg.streams) + 1, RequestID: old.s.RequestID, CommandID: "cmd-" + nonce(),
				Events: []es.Event{{Name: "Retried", Body: bodies[(j+1)%len(bodies)]}}}
			err = f.appendWith(ctx, retryHandles[ah], "retry@"+names[ah], retry)
			checks++
			switch kind := conflictName(err); {
			case err == nil:
				p.agg.streams = append(p.agg.streams, reachStored{retry, time.Now()})
				violate(true, about(fmt.Sprintf("a retry at version %d through %s was accepted, want es.DuplicateRequestIDError", retry.Version, names[ah])))
			case kind == "DuplicateRequestID":
				if what := conflictFields(err, retry); what != "" {
					violate(true, about(fmt.Sprintf("the retry at version %d through %s raised DuplicateRequestID, but %s", retry.Version, names[ah], what)))
				}
			case isConflict(err):
				violate(true, about(fmt.Sprintf("a retry at version %d (the next, free) through %s raised %s, want es.DuplicateRequestIDError (errors.As): %v", retry.Version, names[ah], kind, err)))
			default:
				reachEnd(r, f, first(), fmt.Errorf("the retry of %s through %s failed with %v (not a typed conflict)", short(old.s.RequestID), names[ah], err))
			}
		}
		// Request ids the aggregate never stored: another aggregate's,
		// and one past those reached.
		for j := range reachUnused {
			w := j % len(aggs)
			a := aggs[w]
			req, which := reachReq(bases, (w+1)%len(aggs), 1+rnd.IntN(max(1, len(aggs[(w+1)%len(aggs)].streams)))), "another aggregate's request id"
			if j%2 == 1 {
				req, which = reachReq(bases, w, len(a.streams)+1000+j), "a request id never stored"
			}
			if (w+1)%len(aggs) == w || slices.ContainsFunc(a.streams, func(s reachStored) bool { return s.s.RequestID == req }) {
				continue
			}
			qh := (j + len(probes)) % len(retryHandles)
			c := f.rec.Invoke("checker@"+names[qh], "exists?", short(req)+" ("+which+")")
			ok, err := retryHandles[qh].RequestIDExists(ctx, a.id, req)
			if err != nil {
				c.Info(err.Error())
				reachEnd(r, f, first(), fmt.Errorf("RequestIDExists of %s through %s failed: %w", short(req), names[qh], err))
			}
			c.OK(strconv.FormatBool(ok))
			if checks++; ok {
				violate(false, fmt.Sprintf("RequestIDExists(%s, %s) through %s said true for %s on it", short(a.id.ID), short(req), names[qh], which))
			}
		}
		// Every aggregate loads back with each stream once, as the model
		// has it: the loads at once, through the handles in turn.
		loads := make([][]es.Stream, len(aggs))
		loadErrs := make([]error, len(aggs))
		var wg sync.WaitGroup
		for w, a := range aggs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				qh := w % len(retryHandles)
				loads[w], loadErrs[w] = f.loadWith(retryHandles[qh], "checker@"+names[qh], a.id)
			}()
		}
		wg.Wait()
		for w, a := range aggs {
			qh := w % len(retryHandles)
			got, err := loads[w], loadErrs[w]
			if err != nil {
				reachEnd(r, f, first(), fmt.Errorf("the final load of %s through %s failed: %w", aggLabel(a.id), names[qh], err))
			}
			want := make([]es.Stream, len(a.streams))
			for i, s := range a.streams {
				want[i] = s.s
			}
			checks++
			if i, what := diffStreams(got, want); what != "" {
				violate(false, fmt.Sprintf("the final load of %s through %s: stream %d: %s", short(a.id.ID), names[qh], i+1, what))
			}
			if n := countRequests(got); n != "" {
				violate(false, fmt.Sprintf("the final load of %s through %s holds %s", short(a.id.ID), names[qh], n))
			}
		}

		pauses := stall.Since(start)
		r.Ev.Figure("oldest age reached (time the kit was scheduled, at its retry)", math.Round(oldestAge.Seconds()*10)/10, "s")
		r.Ev.Figure("request ids stored after the oldest, before its retry", oldestAfter, "")
		r.Ev.Figure("request ids stored after a retried one on its aggregate, at most", aggAfter, "")
		r.Ev.Figure("retried (oldest + random sample)", fmt.Sprintf("%d + %d", min(reachOldest, len(probes)), len(probes)-min(reachOldest, len(probes))), "")
		r.Ev.Figure("request ids never stored queried", checks-2*len(probes)-len(aggs), "")
		r.Ev.Figure("time spent", time.Since(start).Milliseconds(), "ms")
		if pauses.Paused() {
			r.Ev.Figure("time the kit was not scheduled", pauses.Total.Milliseconds(), "ms")
		}
		r.Ev.Figure("retries and queries took", time.Since(firstRetry).Milliseconds(), "ms")
		if len(violations) > 0 {
			// The whole first violation is the reason (a Gomega "got" is
			// cut short); the notes hold every one.
			for _, v := range violations {
				r.Ev.Notef("failed: %s", v)
			}
			r.Ev.Notef("%s: the same request ids and sample positions (how many ids are stored depends on the store's rate)", replay(f.seed))
			r.Expect(len(violations) == 0).To(gomega.BeTrue(), "%s (%d of %d checks failed after %d request ids over %.1f s; %s)", violations[headline], len(violations), checks, stored, oldestAge.Seconds(), replay(f.seed))
		}
		cut := ""
		if !reached || oldestAge < horizon {
			cut = fmt.Sprintf(" (short of the %s aimed at: %s)", horizon.Round(100*time.Millisecond), pauses)
			r.Ev.Notef("the oldest request id was %.1f s old at its retry in time the kit was scheduled, short of the %.1f s horizon aimed at: %s; what is claimed is the age reached", oldestAge.Seconds(), horizon.Seconds(), pauses)
		}
		if oldestAge < reachLeastAge && stored < reachLeastIDs {
			r.Unknown("the oldest request id was retried %.1f s after it was stored (time the kit was scheduled)%s and %d request ids were stored: less than ES-4.1 reaches (%s, %d ids), nothing this rule can claim", oldestAge.Seconds(), cut, stored, reachLeastAge, reachLeastIDs)
		}
		r.Ev.Notef("%d request ids stored on %d aggregates; the %d oldest, %.1f s old%s with %d ids stored after them, and %d random ones were refused with es.DuplicateRequestIDError at the next version through %d handles (%d opened just before), found by RequestIDExists, and stored once: a request-id memory that forgets after less than %.1f s, or holds %d ids or fewer store-wide or %d or fewer per aggregate, would have been caught",
			stored, reachAggregates, min(reachOldest, len(probes)), oldestAge.Seconds(), cut, oldestAfter, len(probes)-min(reachOldest, len(probes)), len(retryHandles), len(retryHandles)-len(handles), oldestAge.Seconds(), oldestAfter, aggAfter)
	})
}

// reachEnd ends the rule when a fill or a check could not go on: fail on a
// violation, unknown on a failure that decides nothing.
func reachEnd(r *spec.R, f *fixture, v string, setup error) {
	if v == "" && setup == nil {
		return
	}
	if v != "" {
		r.Expect(v == "").To(gomega.BeTrue(), "%s (%s)", v, replay(f.seed))
	}
	r.Unknown("%v (%s)", setup, replay(f.seed))
}

// countRequests names a request id a loaded history holds more than once
// ("" when none does).
func countRequests(ss []es.Stream) string {
	seen := make(map[string]int, len(ss))
	for _, s := range ss {
		if seen[s.RequestID]++; seen[s.RequestID] == 2 {
			return fmt.Sprintf("request id %s in more than one stream", short(s.RequestID))
		}
	}
	return ""
}
