package api

import (
	"reflect"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/apidesc"
	"github.com/onceproof/tck/internal/gen"
)

// One seed, one schedule and one set of key shapes (the salt aside): what
// `tck run --seed` replays.
func TestScheduleReplaysBySeed(t *testing.T) {
	a, b, c := schedule(7, 2, true), schedule(7, 2, true), schedule(8, 2, true)
	if !reflect.DeepEqual(a.Steps, b.Steps) {
		t.Fatal("one seed drew two schedules")
	}
	if reflect.DeepEqual(a.Steps, c.Steps) {
		t.Fatal("two seeds drew one schedule")
	}
	d := apidesc.Default(apidesc.Replay)
	x, y := newValues(d, 7, "API-5.1").slots("API-5.1", genSlots), newValues(d, 7, "API-5.1").slots("API-5.1", genSlots)
	for i := range x {
		if x[i].twin != y[i].twin || len(x[i].in.id) != len(y[i].in.id) {
			t.Fatalf("key %d: %q (%s) and %q (%s) from one seed", i, x[i].in.id, x[i].twin, y[i].in.id, y[i].twin)
		}
		if x[i].in.id == y[i].in.id {
			t.Fatalf("key %d: two plays share the id %q (the salt must differ)", i, x[i].in.id)
		}
	}
	kinds := map[string]bool{}
	for _, s := range x {
		kinds[s.twin] = true
	}
	for _, k := range newValues(d, 7, "API-5.1").twinKinds() {
		if !kinds[k] {
			t.Errorf("no %s among the keys", k)
		}
	}
}

// The model refuses what the mutants do: a replay without the first
// Location, a twin refused as a repeat, a read that does not find a
// resource created before it.
func TestModelRefuses(t *testing.T) {
	d := apidesc.Default(apidesc.Replay)
	m := model(d)
	created := mOut{Status: 201, Body: `{"id":"k"}`, Location: "/orders/k", CType: "application/json", Shows: -1}
	call := func(in mIn, out mOut) gen.Call[mIn, mOut] {
		return gen.Call[mIn, mOut]{Input: in, Output: out, Call: 0, Return: 0}
	}
	dropped := created
	dropped.Location = ""
	cases := map[string][]gen.Call[mIn, mOut]{
		"a replay without Location": {call(mIn{Key: "k"}, created), call(mIn{Key: "k"}, dropped)},
		"a twin refused":            {call(mIn{Key: "k"}, created), call(mIn{Key: "K"}, mOut{Status: 409, Shows: -1})},
		"a lagging read":            {call(mIn{Key: "k"}, created), call(mIn{Key: "k", Read: true}, mOut{Status: 404, Shows: -1})},
		"in flight after the fact":  {call(mIn{Key: "k"}, mOut{NoAnswer: true, Shows: -1}), call(mIn{Key: "k", Read: true}, mOut{Status: 200, Shows: 0}), call(mIn{Key: "k"}, mOut{Status: 409, Shows: -1})},
	}
	for name, calls := range cases {
		if i := gen.CheckSequential(m, calls); i != len(calls)-1 {
			t.Errorf("%s: the model refused call %d, want the last", name, i)
		}
	}
	ok := []gen.Call[mIn, mOut]{call(mIn{Key: "k"}, mOut{NoAnswer: true, Shows: -1}), call(mIn{Key: "k", Read: true}, mOut{Status: 404, Shows: -1}), call(mIn{Key: "k"}, created), call(mIn{Key: "k"}, created)}
	if i := gen.CheckSequential(m, ok); i >= 0 {
		t.Errorf("a kill before the commit, then a creation on the repeat: refused at %d (%s)", i, strings.TrimSpace(m.Describe(ok[i].Input, ok[i].Output)))
	}
}

// A rule's scopes and ids are distinct: the shortest tenant is the run's
// prefix alone, so two draws of it once made API-1.4's decoy scope the
// scope itself and failed a correct service.
func TestTenantsNeverRepeat(t *testing.T) {
	v := newValues(apidesc.Default(apidesc.Replay), 7, "API-1.4")
	seen := map[string]bool{}
	for range 5000 {
		s := v.tenant()
		if seen[s] {
			t.Fatalf("tenant %q drawn twice", s)
		}
		if len(s) < 9 || len(s) > 48 {
			t.Fatalf("tenant %q: %d characters, outside 9-48", s, len(s))
		}
		seen[s] = true
	}
	for _, c := range v.idClasses() {
		for range 2000 {
			s := v.id("API-1.4", c)
			if seen[s] {
				t.Fatalf("%s id %q drawn twice", c, s)
			}
			seen[s] = true
		}
	}
}
