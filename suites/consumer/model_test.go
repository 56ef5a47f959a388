package consumer

import (
	"fmt"
	"slices"
	"testing"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/gen"
	"github.com/onceproof/tck/internal/sinks"
)

func TestModelCountsEachVersionOnce(t *testing.T) {
	m := newModel([]string{co.ScopeIndex, co.ScopeNotify})
	v1, v2 := co.NewEvent("m-9", 1), co.NewEvent("m-9", 2)
	m.apply(v1)
	m.apply(v1) // redelivery
	m.apply(v2)
	m.apply(v1) // stale replay
	want := map[effectKey]int{
		{"m-9", 1, co.ScopeIndex}: 1, {"m-9", 1, co.ScopeNotify}: 1,
		{"m-9", 2, co.ScopeIndex}: 1, {"m-9", 2, co.ScopeNotify}: 1,
	}
	for k, n := range want {
		if m.expected[k] != n {
			t.Errorf("%s: %d, want %d", k, m.expected[k], n)
		}
	}
	if m.final["m-9"].Version != 2 {
		t.Errorf("final %+v", m.final["m-9"])
	}
	// An older version seen first after a newer one writes nothing.
	m.apply(co.NewEvent("m-1", 2))
	m.apply(co.NewEvent("m-1", 1))
	if n := m.expected[effectKey{"m-1", 1, co.ScopeIndex}]; n != 0 {
		t.Errorf("late v1 index effect %d, want 0", n)
	}
}

func TestModelDiffNamesEveryKind(t *testing.T) {
	m := newModel([]string{co.ScopeIndex, co.ScopeNotify})
	m.apply(co.NewEvent("m-9", 1))
	m.apply(co.NewEvent("m-9", 2))
	b1, b2 := co.NewEvent("m-9", 1).Body, co.NewEvent("m-9", 2).Body
	effects := []sinks.Effect{
		{Scope: co.ScopeIndex, MessageID: "m-9", Version: 1, Body: b1},
		{Scope: co.ScopeIndex, MessageID: "m-9", Version: 2, Body: b2},
		{Scope: co.ScopeIndex, MessageID: "m-9", Version: 1, Body: b1}, // stale overwrite
		{Scope: co.ScopeNotify, MessageID: "m-9", Version: 1},
		{Scope: co.ScopeNotify, MessageID: "m-9", Version: 1}, // duplicate; v2 lost
		{Scope: co.ScopeNotify, MessageID: "m-0", Version: 1}, // never published
	}
	docs := map[string]co.Doc{"m-9": {ID: "m-9", Version: 1, Body: co.NewEvent("m-9", 1).Body}}
	want := []difference{
		{MessageID: "m-9", Document: true, Want: 2, Got: 1, WantBody: co.NewEvent("m-9", 2).Body, GotBody: co.NewEvent("m-9", 1).Body},
		{MessageID: "m-0", Version: 1, Scope: co.ScopeNotify, Want: 0, Got: 1},
		{MessageID: "m-9", Version: 1, Scope: co.ScopeNotify, Want: 1, Got: 2},
		{MessageID: "m-9", Version: 1, Scope: co.ScopeIndex, Want: 1, Got: 2},
		{MessageID: "m-9", Version: 2, Scope: co.ScopeNotify, Want: 1, Got: 0},
	}
	got := m.diff(effects, docs)
	if !slices.Equal(got, want) {
		t.Fatalf("diff:\n got %+v\nwant %+v", got, want)
	}
	// Rendered only at the edge, one line each, naming the kind.
	lines := []string{
		"index m-9: holds v1, want v2 (a stale version won)",
		"(m-0,v1,notify): unexpected effect (want 0, got 1)",
		"(m-9,v1,notify): duplicate effect (want 1, got 2)",
		"(m-9,v1,search-index): duplicate effect (want 1, got 2)",
		"(m-9,v2,notify): effect lost (want 1, got 0)",
	}
	for i, d := range got {
		if d.String() != lines[i] {
			t.Errorf("line %d: %q, want %q", i, d, lines[i])
		}
	}
	if got := m.diff(effects[:2], map[string]co.Doc{"m-9": m.final["m-9"]}); len(got) != 2 {
		t.Errorf("diff of a partly right run: %v", got)
	}
	// Every index write is checked, not only the final document: a write
	// of v1 with v2's body is named, once, even when a later write fixed it.
	mixed := []sinks.Effect{{Scope: co.ScopeIndex, MessageID: "m-9", Version: 1, Body: b2}, effects[1], effects[3], {Scope: co.ScopeNotify, MessageID: "m-9", Version: 2}}
	got = m.diff(mixed, map[string]co.Doc{"m-9": m.final["m-9"]})
	if len(got) != 1 || !got[0].Body || got[0].what() != "write with another body" ||
		got[0].String() != fmt.Sprintf("(m-9,v1,search-index): a write with another body than the event's (wrote %q, want %q)", b2, b1) {
		t.Errorf("a write with another body: %v", got)
	}
}

func TestDocumentDifferences(t *testing.T) {
	m := newModel([]string{co.ScopeIndex})
	m.apply(co.NewEvent("m-1", 1))
	m.apply(co.NewEvent("m-2", 1))
	docs := map[string]co.Doc{
		"m-2": {ID: "m-2", Version: 1, Body: "edited by hand"},
		"m-3": {ID: "m-3", Version: 4},
	}
	var whats []string
	for _, d := range m.diff(nil, docs) {
		if d.Document {
			whats = append(whats, d.MessageID+" "+d.what())
		}
	}
	want := []string{"m-1 missing document", "m-2 document differs", "m-3 unexpected document"}
	if !slices.Equal(whats, want) {
		t.Errorf("documents: %v, want %v", whats, want)
	}
}

func TestScheduleIsSeededAndRich(t *testing.T) {
	a, edges := schedule(42, 200, "")
	b, _ := schedule(42, 200, "")
	if digest(a) != digest(b) || len(a) != len(b) {
		t.Fatal("same seed, different schedules")
	}
	for i := range a {
		if a[i].event != b[i].event || a[i].kind != b[i].kind || a[i].loseAck != b[i].loseAck || (a[i].crash == nil) != (b[i].crash == nil) {
			t.Fatalf("step %d differs", i)
		}
	}
	if c, _ := schedule(43, 200, ""); digest(c) == digest(a) {
		t.Error("seeds 42 and 43 gave the same schedule")
	}
	n, kinds, crashes, lost, edits, stale := 0, map[stepKind]int{}, 0, 0, 0, 0
	takeovers, ackFaults, wide := 0, map[faultKind]int{}, 0
	newest, first := map[string]int{}, map[string]int{}
	for _, s := range a {
		n += s.publishes()
		kinds[s.kind]++
		if s.crash != nil {
			crashes++
		}
		if s.loseAck {
			lost++
		}
		if s.again {
			takeovers++
		}
		if s.ackFault != "" {
			ackFaults[s.ackFault]++
		}
		if s.event.Version >= 10 {
			wide++
		}
		if f, ok := first[s.event.MessageID]; !ok {
			first[s.event.MessageID] = s.event.Version
		} else if s.kind != stepReplay && s.event.Version != f {
			edits++
		}
		if s.kind == stepReplay && s.event.Version < newest[s.event.MessageID] {
			stale++
		}
		if s.event.Version > newest[s.event.MessageID] {
			newest[s.event.MessageID] = s.event.Version
		}
	}
	if n < 200 || kinds[stepTwin] == 0 || kinds[stepReplay] == 0 || kinds[stepPair] == 0 || crashes == 0 || lost == 0 || edits == 0 || stale == 0 {
		t.Fatalf("events %d kinds %v crashes %d lost acks %d edits %d stale replays %d", n, kinds, crashes, lost, edits, stale)
	}
	if takeovers == 0 || ackFaults[faultError] == 0 || ackFaults[faultTimeout] == 0 || wide < n/2 || edges[gen.ClassDigits] == 0 || len(edges) < 3 {
		t.Fatalf("take-over crashes %d, failed acks %v, versions >= 10 in %d of %d steps, version classes %v", takeovers, ackFaults, wide, len(a), edges)
	}
	if lateSteps(a) == 0 {
		t.Fatal("no version was first delivered after a newer one")
	}
}

// Out-of-order first deliveries and version pairs occur in every seed at
// about the stated rates (issue 10: none in 2,000 seeds before).
func TestScheduleReordersVersions(t *testing.T) {
	steps, late, pairs := 0, 0, 0
	for seed := int64(1); seed <= 200; seed++ {
		s, _ := schedule(seed, 200, "")
		steps += len(s)
		l := lateSteps(s)
		if l == 0 {
			t.Errorf("seed %d: no late first delivery", seed)
		}
		late += l
		for _, st := range s {
			if st.kind == stepPair {
				pairs++
			}
		}
	}
	t.Logf("200 seeds: %d steps, %d late first deliveries, %d version pairs", steps, late, pairs)
	if pairs*100 < steps*5 {
		t.Errorf("version pairs %d of %d steps, want about %.0f%%", pairs, steps, 100*pPair)
	}
}

// A superseded version's skipped index write is correct while the final
// document holds the newest version.
func TestSupersededWriteMayBeSkipped(t *testing.T) {
	m := newModel([]string{co.ScopeIndex})
	v1, v2 := co.NewEvent("m-1", 1), co.NewEvent("m-1", 2)
	m.apply(v1)
	m.apply(v2)
	only2 := []sinks.Effect{{Scope: co.ScopeIndex, MessageID: "m-1", Version: 2, Body: v2.Body}}
	if d := m.diff(only2, map[string]co.Doc{"m-1": {ID: "m-1", Version: 2, Body: v2.Body}}); len(d) != 0 {
		t.Errorf("skipped superseded write judged wrong: %v", d)
	}
	if d := m.diff(nil, map[string]co.Doc{"m-1": {ID: "m-1", Version: 1, Body: v1.Body}}); len(d) == 0 {
		t.Error("a final document at the older version judged right")
	}
	twice := append(only2, sinks.Effect{Scope: co.ScopeIndex, MessageID: "m-1", Version: 1, Body: v1.Body}, sinks.Effect{Scope: co.ScopeIndex, MessageID: "m-1", Version: 1, Body: v1.Body})
	if d := m.diff(twice, map[string]co.Doc{"m-1": {ID: "m-1", Version: 2, Body: v2.Body}}); len(d) == 0 {
		t.Error("two writes of a superseded version judged right")
	}
}

// A missing effect may still be on its way (a durable handoff before the
// ack): waiting can mend it. A doubled or unexpected one cannot, so it ends
// the wait for effects at once and is evidence whether or not the consumer
// was quiet.
func TestOnlyMissingEffectsAreWorthWaitingFor(t *testing.T) {
	m := newModel([]string{co.ScopeIndex, co.ScopeNotify})
	e := co.NewEvent("m-9", 1)
	m.apply(e)
	missing := m.diff(nil, nil)
	if len(missing) == 0 || settledDiffs(missing) {
		t.Fatalf("effects not yet there: %v, settled %v; want differences worth waiting for", missing, settledDiffs(missing))
	}
	for _, d := range missing {
		if !d.pendingKind() {
			t.Errorf("%s: not a pending kind", d)
		}
	}
	doc := co.Doc{ID: e.MessageID, Version: e.Version, Body: e.Body}
	twice := []sinks.Effect{
		{Scope: co.ScopeIndex, MessageID: "m-9", Version: 1, Body: e.Body},
		{Scope: co.ScopeNotify, MessageID: "m-9", Version: 1},
		{Scope: co.ScopeNotify, MessageID: "m-9", Version: 1},
	}
	if d := m.diff(twice, map[string]co.Doc{"m-9": doc}); !settledDiffs(d) || d[0].pendingKind() {
		t.Errorf("a duplicate: %v; want a settled difference", d)
	}
	if d := m.diff(twice[:2], map[string]co.Doc{"m-9": doc}); !settledDiffs(d) || len(d) != 0 {
		t.Errorf("every effect once: %v; want none", d)
	}
}
