package consumer

import (
	"fmt"
	"math/rand"
	"sort"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/sinks"
)

// EffectKey is one (message, version, scope).
type EffectKey struct {
	MessageID string
	Version   int
	Scope     string
}

func (k EffectKey) String() string {
	return fmt.Sprintf("(%s,v%d,%s)", k.MessageID, k.Version, k.Scope)
}

// Model is the expected outcome of a schedule, computed from the schedule
// alone. The kit drives the broker one step at a time (each step acked
// before the next), so the order in which versions first take effect is the
// schedule's order, and the model can be exact:
//
//   - notify: every (message, version) the consumer first sees gives exactly
//     one notification; a redelivery or replay gives none;
//   - search-index: a version gives one write if it is newer than every
//     version of the message applied before it, else none (an older version
//     never overwrites a newer one); the final document of a message is its
//     newest version.
type Model struct {
	scopes   map[string]bool
	seen     map[string]bool // event ids
	newest   map[string]int
	Expected map[EffectKey]int
	Final    map[string]co.Doc
}

// NewModel models a consumer declaring scopes.
func NewModel(scopes []string) *Model {
	m := &Model{scopes: map[string]bool{}, seen: map[string]bool{}, newest: map[string]int{},
		Expected: map[EffectKey]int{}, Final: map[string]co.Doc{}}
	for _, s := range scopes {
		m.scopes[s] = true
	}
	return m
}

// Apply records that e was delivered (first time, redelivery or replay).
func (m *Model) Apply(e co.Event) {
	if m.seen[e.EventID] {
		return
	}
	m.seen[e.EventID] = true
	if m.scopes[co.ScopeNotify] {
		m.Expected[EffectKey{e.MessageID, e.Version, co.ScopeNotify}] = 1
	}
	if m.scopes[co.ScopeIndex] {
		k := EffectKey{e.MessageID, e.Version, co.ScopeIndex}
		if e.Version > m.newest[e.MessageID] {
			m.newest[e.MessageID] = e.Version
			m.Expected[k] = 1
			m.Final[e.MessageID] = co.Doc{ID: e.MessageID, Version: e.Version, Body: e.Body}
		} else {
			m.Expected[k] = 0
		}
	}
}

// Diff compares observed effects and index documents with the model and
// returns one line per difference, in a stable order.
func (m *Model) Diff(effects []sinks.Effect, docs map[string]co.Doc) []string {
	got := map[EffectKey]int{}
	for _, e := range effects {
		got[EffectKey{e.MessageID, e.Version, e.Scope}]++
	}
	keys := map[EffectKey]bool{}
	for k := range m.Expected {
		keys[k] = true
	}
	for k := range got {
		keys[k] = true
	}
	var ks []EffectKey
	for k := range keys {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		a, b := ks[i], ks[j]
		if a.MessageID != b.MessageID {
			return a.MessageID < b.MessageID
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.Scope < b.Scope
	})
	// Index documents first: "a stale version won" says more than the
	// effect count it also shows up in.
	out := m.diffDocs(docs)
	for _, k := range ks {
		want, g := m.Expected[k], got[k]
		switch {
		case g == want:
		case g == 0:
			out = append(out, fmt.Sprintf("%s: effect lost (want %d, got 0)", k, want))
		case g > want && want > 0:
			out = append(out, fmt.Sprintf("%s: duplicate effect (want %d, got %d)", k, want, g))
		default:
			out = append(out, fmt.Sprintf("%s: unexpected effect (want %d, got %d)", k, want, g))
		}
	}
	return out
}

func (m *Model) diffDocs(docs map[string]co.Doc) []string {
	if !m.scopes[co.ScopeIndex] {
		return nil
	}
	var out []string
	ids := map[string]bool{}
	for id := range m.Final {
		ids[id] = true
	}
	for id := range docs {
		ids[id] = true
	}
	for _, id := range sortedKeys(ids) {
		want, wok := m.Final[id]
		got, gok := docs[id]
		switch {
		case wok && !gok:
			out = append(out, fmt.Sprintf("index %s: missing (want v%d)", id, want.Version))
		case !wok && gok:
			out = append(out, fmt.Sprintf("index %s: unexpected document v%d", id, got.Version))
		case got.Version < want.Version:
			out = append(out, fmt.Sprintf("index %s: holds v%d, want v%d (a stale version won)", id, got.Version, want.Version))
		case want != got:
			out = append(out, fmt.Sprintf("index %s: holds v%d %q, want v%d %q", id, got.Version, got.Body, want.Version, want.Body))
		}
	}
	return out
}

// StepKind is what one schedule step does.
type StepKind string

const (
	StepNew    StepKind = "new"    // publish an event not published before (a first version or an edit)
	StepReplay StepKind = "replay" // publish an already handled event again (same event id; a stale one if newer versions exist)
	StepTwin   StepKind = "twin"   // publish two copies of a new event at once, held for two workers (CO-1.5)
)

// Step is one step of a schedule.
type Step struct {
	Kind    StepKind
	Event   co.Event
	Crash   *plan // armed before the step, if any
	LoseAck bool  // the kit loses the first ack, so the broker redelivers
}

// Publishes counts the broker messages a step publishes.
func (s Step) Publishes() int {
	if s.Kind == StepTwin {
		return 2
	}
	return 1
}

var crashPoints = []struct {
	p     Point
	scope string
}{
	{BeforeEffect, co.ScopeIndex}, {AfterEffect, co.ScopeIndex},
	{BeforeEffect, co.ScopeNotify}, {AfterEffect, co.ScopeNotify},
	{BeforeAck, ""}, {AfterAck, ""},
}

// Schedule generates a seeded schedule of at least events broker messages:
// first versions of new messages, edits (the next version), replays of
// handled events (many of them stale), twin copies, crashes at every point
// the kit controls, and lost acks.
func Schedule(seed int64, events int) []Step {
	r := rand.New(rand.NewSource(seed))
	var steps []Step
	versions := map[string]int{}
	var msgs []string
	var handled []co.Event
	n := 0
	for n < events {
		var s Step
		x := r.Float64()
		switch {
		case x < 0.18 && len(handled) > 0:
			s = Step{Kind: StepReplay, Event: handled[r.Intn(len(handled))]}
		case x < 0.28:
			s = Step{Kind: StepTwin}
		default:
			s = Step{Kind: StepNew}
		}
		if s.Kind != StepReplay {
			var m string
			if len(msgs) == 0 || r.Float64() < 0.4 {
				m = fmt.Sprintf("m-%d", len(msgs)+1)
				msgs = append(msgs, m)
			} else {
				m = msgs[r.Intn(len(msgs))]
			}
			versions[m]++
			s.Event = co.NewEvent(m, versions[m])
			handled = append(handled, s.Event)
		}
		if r.Float64() < 0.12 {
			cp := crashPoints[r.Intn(len(crashPoints))]
			s.Crash = &plan{Point: cp.p, Event: s.Event.EventID, Scope: cp.scope}
		} else if r.Float64() < 0.06 {
			s.LoseAck = true
		}
		steps = append(steps, s)
		n += s.Publishes()
	}
	return steps
}
