package eventstore

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/catalog"
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

// The catalog states ES-4.3's sizes as the rule has them.
func TestCatalogStatesTheReach(t *testing.T) {
	secs := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s" }
	for _, r := range catalog.All("eventstore") {
		if r.ID != "ES-4.3" {
			continue
		}
		for _, want := range []string{
			fmt.Sprintf("Six writers store up to %d streams", reachEarlyIDs), fmt.Sprintf("on six aggregates through %d handles", reachHandles),
			"(at most " + secs(reachEarlyFor) + ")", "the oldest reach " + secs(reachHorizon), fmt.Sprintf("bring the total to %d", reachIDs),
			"at most " + secs(reachLateFor), fmt.Sprintf("retries the %d oldest and %d random", reachOldest, reachSample),
			fmt.Sprintf("and %d fresh ones", reachFresh), fmt.Sprintf("below %s and %d ids", secs(reachLeastAge), reachLeastIDs),
		} {
			if !strings.Contains(r.Contract, want) {
				t.Errorf("the catalog's ES-4.3 does not say %q: %s", want, r.Contract)
			}
		}
		if reachAggregates != 6 {
			t.Errorf("the catalog says six writers, the rule has %d", reachAggregates)
		}
		return
	}
	t.Fatal("no ES-4.3 in the catalog")
}
