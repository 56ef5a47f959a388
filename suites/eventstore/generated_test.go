package eventstore

import (
	"slices"
	"testing"
	"time"

	"github.com/onceproof/tck/es"
)

// Every pair is two aggregates, and no two pairs share one.
func TestPairsAreDistinct(t *testing.T) {
	seen := map[es.AggregateID]string{}
	for k, kind := range pairKinds {
		pr := pairOf(k, [4]string{"a", "b", "c", "d"}, "n")
		if pr[0] == pr[1] {
			t.Errorf("pair %q is one aggregate", kind)
		}
		for _, a := range pr {
			if other, dup := seen[a]; dup {
				t.Errorf("pairs %q and %q share %v", kind, other, a)
			}
			seen[a] = kind
		}
	}
}

func TestModelExpects(t *testing.T) {
	agg := es.AggregateID{Context: "c", Name: "n", ID: "i", Tenant: "t"}
	m := &genModel{streams: []es.Stream{{Aggregate: agg, Version: 1, RequestID: "r1"}, {Aggregate: agg, Version: 2, RequestID: "r2"}}}
	for _, c := range []struct {
		v    int
		req  string
		ok   bool
		want []string
	}{
		{3, "r3", true, nil},
		{3, "r1", false, []string{"DuplicateRequestID"}},
		{2, "r3", false, []string{"VersionConflict"}},
		{2, "r1", false, []string{"VersionConflict", "DuplicateRequestID"}},
		{1, "r3", false, []string{"DuplicateAggregateID"}},
		{1, "r1", false, []string{"DuplicateRequestID", "DuplicateAggregateID"}},
	} {
		ok, got := m.expect(es.Stream{Aggregate: agg, Version: c.v, RequestID: c.req})
		if ok != c.ok || !slices.Equal(got, c.want) {
			t.Errorf("v%d %s: %v %v, want %v %v", c.v, c.req, ok, got, c.ok, c.want)
		}
	}
	asked := es.Stream{Aggregate: agg, Version: 1, RequestID: "r9"}
	if what := conflictFields(&es.VersionConflictError{Aggregate: agg, Version: 2, RequestID: "r9"}, asked); what == "" {
		t.Error("a conflict reporting the tail as the version passed")
	}
	if what := conflictFields(&es.DuplicateAggregateIDError{Aggregate: agg, RequestID: "r1"}, asked); what == "" {
		t.Error("a creation conflict carrying the stored request id passed")
	}
	if what := conflictFields(&es.DuplicateAggregateIDError{Aggregate: agg, RequestID: "r9"}, asked); what != "" {
		t.Errorf("a correct creation conflict: %s", what)
	}
}

// One seed, one schedule; the waits stay within the horizon.
func TestGenScheduleRepeats(t *testing.T) {
	a, b := newGenSchedule(9, time.Second, 3), newGenSchedule(9, time.Second, 3)
	if len(a.Steps) != genSteps {
		t.Fatalf("%d steps", len(a.Steps))
	}
	for i := range a.Steps {
		x, y := a.Steps[i], b.Steps[i]
		if x.Instance != y.Instance || x.Delay != y.Delay || x.Op.Kind != y.Op.Kind || x.Op.Pick != y.Op.Pick || x.Op.Req != y.Op.Req || len(x.Op.Events) != len(y.Op.Events) {
			t.Fatalf("step %d differs between two draws of one seed", i)
		}
	}
}
