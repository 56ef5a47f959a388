package consumer

import (
	"fmt"
	"strings"
)

// Later calls fail too (issue 37): a kit that fails only the first effect
// call of an event passes a consumer that gives up after two failures, or
// one that takes a failed de-dupe read for "no record". flakyCalls fails
// any call of an armed event, the second, third... as much as the first:
// an effect call per scope (index write, notify) and, where the kit hands
// the consumer its de-dupe store (env.Store, in process), every store call
// by its label (store get, store insert...). Each call of an (event, call)
// fails when a hash of the rule's seed, the event (without the run's tag),
// the call and its number falls under the rate of its class, so a seed
// replays which calls fail whatever the run's tag or timing.
//
// A correct consumer that retries must get through: at most maxFailRun
// failures in a row per (event, call), and at most maxFailsPerEvent in all
// per event of effect calls and as many of store calls; past that, its
// calls succeed.
type flakyCalls struct {
	seed         int64
	strip        string             // the run's tag, cut from event ids before hashing
	sinkRate     float64            // of an effect call
	storeRate    float64            // of a de-dupe store call
	timeoutShare float64            // of the failures of a write: a timeout after it took effect
	armed        map[string]bool    // event ids whose calls may fail at the rates
	forced       map[string]int     // "event|call" -> calls still to fail (an error) before the rates apply
	runs         map[string]*flaked // "event|call"
	perEvent     map[string]int     // failures so far per event and class ("|sink", "|store")
	log          map[string][]string
	sinkFails    int
	storeFails   int
}

// flaked is what an (event, call) saw so far.
type flaked struct{ n, run int }

const (
	maxFailRun       = 3 // failures in a row of one (event, call): more than a consumer that gives up after two can take
	maxFailsPerEvent = 5 // failures in all of one event, per class (effect, store): a retrying consumer settles well within Timing.Settle
)

// newFlakyCalls draws the rates from the rule's seed: an effect call fails
// 25-55% of the time, a store call 15-40%, and 20-50% of the failures of a
// write are timeouts after it took effect.
func newFlakyCalls(seed int64, strip string) *flakyCalls {
	u := func(salt string, lo, hi float64) float64 { return lo + (hi-lo)*unit(seed, salt) }
	return &flakyCalls{
		seed: seed, strip: strip,
		sinkRate:     u("sink-rate", 0.25, 0.55),
		storeRate:    u("store-rate", 0.15, 0.40),
		timeoutShare: u("timeout-share", 0.20, 0.50),
		armed:        map[string]bool{}, forced: map[string]int{}, runs: map[string]*flaked{},
		perEvent: map[string]int{}, log: map[string][]string{},
	}
}

// storeCall says whether call is a de-dupe store call (else a scope).
func storeCall(call string) bool { return strings.HasPrefix(call, "store ") }

// class is the budget a call's failures count against: the store's calls
// are many more per delivery than the effect calls, and must not use up
// the effect calls' share.
func class(call string) string {
	if storeCall(call) {
		return "|store"
	}
	return "|sink"
}

// take decides call n+1 of (event, call): whether it fails, and how.
func (f *flakyCalls) take(event, call string) (faultKind, bool) {
	k := event + "|" + call
	st := f.runs[k]
	if st == nil {
		st = &flaked{}
		f.runs[k] = st
	}
	st.n++
	fail, kind := false, faultError
	switch {
	case f.forced[k] > 0:
		f.forced[k]--
		fail = true
	case !f.armed[event], st.run >= maxFailRun, f.perEvent[event+class(call)] >= maxFailsPerEvent:
	default:
		base := strings.ReplaceAll(event, f.strip, "")
		rate := f.sinkRate
		if storeCall(call) {
			rate = f.storeRate
		}
		salt := fmt.Sprintf("%s|%s|%d", base, call, st.n)
		fail = unit(f.seed, salt) < rate
		// A read that times out is a read that failed: only a write can
		// have taken effect before its answer was lost.
		if fail && call != "store get" && unit(f.seed, salt+"|kind") < f.timeoutShare {
			kind = faultTimeout
		}
	}
	if !fail {
		st.run = 0
		return "", false
	}
	st.run++
	f.perEvent[event+class(call)]++
	if storeCall(call) {
		f.storeFails++
	} else {
		f.sinkFails++
	}
	f.log[event] = append(f.log[event], fmt.Sprintf("%s #%d %s", call, st.n, kind))
	return kind, true
}

// unit is a number in [0, 1) from seed and salt (splitmix64 over FNV-1a):
// the same seed and salt give the same number on every run.
func unit(seed int64, salt string) float64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(salt); i++ {
		h ^= uint64(salt[i])
		h *= 1099511628211
	}
	x := uint64(seed) ^ h
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}

// flaky arms the rule's call failures (drawn from its seed) and records
// the rates in the evidence.
func (w *world) flaky() *flakyCalls {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.flakyCalls == nil {
		f := newFlakyCalls(w.seed, w.suffix())
		w.flakyCalls = f
		w.ev.Figure("call failure rates", fmt.Sprintf("effect calls %.0f%%, de-dupe store calls %.0f%%, of which writes time out after taking effect %.0f%%",
			100*f.sinkRate, 100*f.storeRate, 100*f.timeoutShare),
			fmt.Sprintf("drawn from the seed; any call of an armed event, not only the first; at most %d in a row per (event, call), %d per event of effect calls and %d of store calls", maxFailRun, maxFailsPerEvent, maxFailsPerEvent))
	}
	return w.flakyCalls
}

// armFlaky makes every later call of event fail at the rule's rates.
func (w *world) armFlaky(event string) {
	f := w.flaky()
	w.mu.Lock()
	defer w.mu.Unlock()
	f.armed[event] = true
	w.rec.Note("kit", "arm failures", event, "any call, at the rule's rates")
}

// forceFailures makes the next n calls of (event, call) fail with an error
// (n at most maxFailRun): the failures in a row a consumer that gives up
// early does not survive.
func (w *world) forceFailures(event, call string, n int) {
	f := w.flaky()
	w.mu.Lock()
	defer w.mu.Unlock()
	f.forced[event+"|"+call] = min(n, maxFailRun)
	w.rec.Note("kit", "arm failures", event, fmt.Sprintf("the next %d %s calls fail", n, call))
}

// takeCallFault decides a call of event by the flaky plan, if the rule has
// one; call is a scope or a store call's label.
func (w *world) takeCallFault(event, call string) (faultKind, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.flakyCalls == nil || event == "" {
		return "", false
	}
	k, ok := w.flakyCalls.take(event, call)
	if ok && !storeCall(call) {
		w.faultsFired++ // the figure "sink calls failed by the kit"; store calls have their own
	}
	return k, ok
}

// failedCalls is what the kit failed of event's calls so far, in order
// ("notify #2 error").
func (w *world) failedCalls(event string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.flakyCalls == nil {
		return nil
	}
	return append([]string(nil), w.flakyCalls.log[event]...)
}

// failedCount is how many calls of event the kit failed; store counts the
// de-dupe store's.
func (w *world) failedCount(event string, store bool) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.flakyCalls == nil {
		return 0
	}
	n := 0
	for _, s := range w.flakyCalls.log[event] {
		if storeCall(s) == store {
			n++
		}
	}
	return n
}

// flakyTotals is how many effect and store calls the plan failed.
func (w *world) flakyTotals() (sink, store int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.flakyCalls == nil {
		return 0, 0
	}
	return w.flakyCalls.sinkFails, w.flakyCalls.storeFails
}
