package consumer

import (
	"fmt"
	"strings"
	"testing"
)

// CO-2.7's failures replay from the seed whatever the run's tag, and stay
// within the bounds that let a retrying consumer through.
func TestFlakyCallsReplayAndBounds(t *testing.T) {
	calls := []string{"search-index", "notify", "store get", "store insert", "store put", "store compare-and-swap"}
	play := func(seed int64, tag string) []string {
		f := newFlakyCalls(seed, tag)
		var out []string
		for m := 1; m <= 20; m++ {
			event := fmt.Sprintf("evt:m-%d%s:v9", m, tag)
			f.armed[event] = true
			inRow := map[string]int{}
			perClass := map[string]int{}
			for n := 0; n < 40; n++ {
				call := calls[(n*7+m)%len(calls)]
				kind, failed := f.take(event, call)
				out = append(out, fmt.Sprintf("%d %s %v %s", m, call, failed, kind))
				if !failed {
					inRow[call] = 0
					continue
				}
				inRow[call]++
				perClass[class(call)]++
				if inRow[call] > maxFailRun {
					t.Fatalf("seed %d: %s %s failed %d times in a row, more than %d", seed, event, call, inRow[call], maxFailRun)
				}
				if perClass[class(call)] > maxFailsPerEvent {
					t.Fatalf("seed %d: %s failed %d %s calls, more than %d", seed, event, perClass[class(call)], class(call), maxFailsPerEvent)
				}
				if call == "store get" && kind != faultError {
					t.Fatalf("a read failed as %s: only a write can take effect before its answer is lost", kind)
				}
			}
		}
		return out
	}
	for _, seed := range []int64{1, 42, 6919563766733628} {
		a, b := play(seed, "@co-2.7-aaaaaa"), play(seed, "@co-2.7-bbbbbb")
		failures := 0
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("seed %d: call %d decided %q, then %q under another run tag", seed, i, a[i], b[i])
			}
			if strings.Contains(a[i], " true ") {
				failures++
			}
		}
		if failures == 0 {
			t.Errorf("seed %d: no call failed in %d", seed, len(a))
		}
		f := newFlakyCalls(seed, "")
		if f.sinkRate < 0.25 || f.sinkRate > 0.55 || f.storeRate < 0.15 || f.storeRate > 0.40 {
			t.Errorf("seed %d: rates %.2f, %.2f outside their ranges", seed, f.sinkRate, f.storeRate)
		}
	}
}

// Forced failures come first, as errors, even on an event not armed.
func TestForcedFailuresComeFirst(t *testing.T) {
	f := newFlakyCalls(7, "")
	f.forced["evt:m-1:v1|notify"] = 3
	for n := 1; n <= 4; n++ {
		kind, failed := f.take("evt:m-1:v1", "notify")
		if want := n <= 3; failed != want || (failed && kind != faultError) {
			t.Fatalf("call %d: failed %v (%s), want %v", n, failed, kind, want)
		}
	}
}
