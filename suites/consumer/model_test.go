package consumer

import (
	"strings"
	"testing"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/sinks"
)

func TestModelCountsEachVersionOnce(t *testing.T) {
	m := NewModel([]string{co.ScopeIndex, co.ScopeNotify})
	v1, v2 := co.NewEvent("m-9", 1), co.NewEvent("m-9", 2)
	m.Apply(v1)
	m.Apply(v1) // redelivery
	m.Apply(v2)
	m.Apply(v1) // stale replay
	want := map[EffectKey]int{
		{"m-9", 1, co.ScopeIndex}: 1, {"m-9", 1, co.ScopeNotify}: 1,
		{"m-9", 2, co.ScopeIndex}: 1, {"m-9", 2, co.ScopeNotify}: 1,
	}
	for k, n := range want {
		if m.Expected[k] != n {
			t.Errorf("%s: %d, want %d", k, m.Expected[k], n)
		}
	}
	if m.Final["m-9"].Version != 2 {
		t.Errorf("final %+v", m.Final["m-9"])
	}
	// An older version seen first after a newer one writes nothing.
	m.Apply(co.NewEvent("m-1", 2))
	m.Apply(co.NewEvent("m-1", 1))
	if n := m.Expected[EffectKey{"m-1", 1, co.ScopeIndex}]; n != 0 {
		t.Errorf("late v1 index effect %d, want 0", n)
	}
}

func TestModelDiffNamesEveryKind(t *testing.T) {
	m := NewModel([]string{co.ScopeIndex, co.ScopeNotify})
	m.Apply(co.NewEvent("m-9", 1))
	m.Apply(co.NewEvent("m-9", 2))
	effects := []sinks.Effect{
		{Scope: co.ScopeIndex, MessageID: "m-9", Version: 1},
		{Scope: co.ScopeIndex, MessageID: "m-9", Version: 2},
		{Scope: co.ScopeIndex, MessageID: "m-9", Version: 1}, // stale overwrite
		{Scope: co.ScopeNotify, MessageID: "m-9", Version: 1},
		{Scope: co.ScopeNotify, MessageID: "m-9", Version: 1}, // duplicate; v2 lost
		{Scope: co.ScopeNotify, MessageID: "m-0", Version: 1}, // never published
	}
	docs := map[string]co.Doc{"m-9": {ID: "m-9", Version: 1, Body: co.NewEvent("m-9", 1).Body}}
	d := strings.Join(m.Diff(effects, docs), "\n")
	for _, want := range []string{"a stale version won", "(m-9,v1,notify): duplicate", "(m-9,v2,notify): effect lost", "(m-0,v1,notify): unexpected", "(m-9,v1,search-index): duplicate"} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
	if got := m.Diff(effects[:2], map[string]co.Doc{"m-9": m.Final["m-9"]}); len(got) != 2 {
		t.Errorf("diff of a partly right run: %v", got)
	}
}

func TestScheduleIsSeededAndRich(t *testing.T) {
	a, b := Schedule(42, 200), Schedule(42, 200)
	if len(a) != len(b) {
		t.Fatal("same seed, different schedules")
	}
	for i := range a {
		if a[i].Event != b[i].Event || a[i].Kind != b[i].Kind || a[i].LoseAck != b[i].LoseAck || (a[i].Crash == nil) != (b[i].Crash == nil) {
			t.Fatalf("step %d differs", i)
		}
	}
	n, kinds, crashes, lost, edits, stale := 0, map[StepKind]int{}, 0, 0, 0, 0
	newest := map[string]int{}
	for _, s := range a {
		n += s.Publishes()
		kinds[s.Kind]++
		if s.Crash != nil {
			crashes++
		}
		if s.LoseAck {
			lost++
		}
		if s.Kind != StepReplay && s.Event.Version > 1 {
			edits++
		}
		if s.Kind == StepReplay && s.Event.Version < newest[s.Event.MessageID] {
			stale++
		}
		if s.Event.Version > newest[s.Event.MessageID] {
			newest[s.Event.MessageID] = s.Event.Version
		}
	}
	if n < 200 || kinds[StepTwin] == 0 || kinds[StepReplay] == 0 || crashes == 0 || lost == 0 || edits == 0 || stale == 0 {
		t.Fatalf("events %d kinds %v crashes %d lost acks %d edits %d stale replays %d", n, kinds, crashes, lost, edits, stale)
	}
}
