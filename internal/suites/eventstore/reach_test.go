package eventstore

import (
	"testing"

	"github.com/onceproof/tck/es"
)

// Every writer's every stream gets a request id of its own, whatever the
// drawn bases hold (digits, the separators the id is built with, spaces at
// either end, one character).
func TestReachRequestIDsAreDistinct(t *testing.T) {
	bases := []string{"a", "1", "r1.2-", " x ", "-", ".r", "é", "1r2.3-4"}
	seen := map[string][2]int{}
	for w := range reachAggregates + 6 {
		for seq := 1; seq <= 2000; seq++ {
			id := reachReq(bases, w, seq)
			if prev, dup := seen[id]; dup {
				t.Fatalf("writer %d stream %d and writer %d stream %d share request id %q", w, seq, prev[0], prev[1], id)
			}
			seen[id] = [2]int{w, seq}
		}
	}
}

func TestCountRequests(t *testing.T) {
	if got := countRequests(nil); got != "" {
		t.Errorf("an empty history: %q", got)
	}
	ss := []es.Stream{{Version: 1, RequestID: "a"}, {Version: 2, RequestID: "b"}, {Version: 3, RequestID: "a"}}
	if got := countRequests(ss); got == "" {
		t.Error("a request id in two streams passed")
	}
	if got := countRequests(ss[:2]); got != "" {
		t.Errorf("two request ids: %q", got)
	}
}
