package consumer

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/sinks"
)

// effectKey is one (message, version, scope).
type effectKey struct {
	messageID string
	version   int
	scope     string
}

func (k effectKey) String() string {
	return fmt.Sprintf("(%s,v%d,%s)", k.messageID, k.version, k.scope)
}

// model is the expected outcome of a schedule, computed from the schedule
// alone. The kit drives the broker one step at a time (each step acked
// before the next), so the order in which versions first take effect is the
// schedule's order, and the model can be exact:
//
//   - notify: every (message, version) the consumer first sees gives exactly
//     one notification; a redelivery or replay gives none;
//   - search-index: a version gives one write if it is newer than every
//     version of the message applied before it, else none (an older version
//     never overwrites a newer one); the final document of a message is its
//     newest version. A version superseded by a newer one may have been
//     skipped (a concurrent pair, a write lost to an ack-first crash that
//     Reconcile need not restore): while the final document holds the
//     newest version, no write for it is as correct as one.
type model struct {
	scopes   map[string]bool
	seen     map[string]bool // event ids
	newest   map[string]int
	expected map[effectKey]int
	optional map[effectKey]bool // superseded index writes: 0 is as good as the expected 1
	final    map[string]co.Doc
	bodies   map[effectKey]string // the body of each (message, version) seen, under ScopeIndex
}

// newModel models a consumer declaring scopes.
func newModel(scopes []string) *model {
	m := &model{scopes: map[string]bool{}, seen: map[string]bool{}, newest: map[string]int{},
		expected: map[effectKey]int{}, optional: map[effectKey]bool{}, final: map[string]co.Doc{}, bodies: map[effectKey]string{}}
	for _, s := range scopes {
		m.scopes[s] = true
	}
	return m
}

// apply records that e was delivered (first time, redelivery or replay).
func (m *model) apply(e co.Event) {
	if m.seen[e.EventID] {
		return
	}
	m.seen[e.EventID] = true
	if m.scopes[co.ScopeNotify] {
		m.expected[effectKey{e.MessageID, e.Version, co.ScopeNotify}] = 1
	}
	if m.scopes[co.ScopeIndex] {
		k := effectKey{e.MessageID, e.Version, co.ScopeIndex}
		m.bodies[k] = e.Body
		if old := m.newest[e.MessageID]; e.Version > old {
			if old > 0 {
				m.optional[effectKey{e.MessageID, old, co.ScopeIndex}] = true
			}
			m.newest[e.MessageID] = e.Version
			m.expected[k] = 1
			m.final[e.MessageID] = co.Doc{ID: e.MessageID, Version: e.Version, Body: e.Body}
		} else {
			m.expected[k] = 0
		}
	}
}

// difference is one way the sinks differ from the model: an effect count
// of one (message, version, scope), or the final index document of one
// message. It is rendered as text only for the evidence and the failure.
type difference struct {
	MessageID string
	// Document: the final index document differs. Want and Got are then
	// the versions wanted and held (0: no document), and a document held
	// at the wanted version differs in its body.
	Document          bool
	WantBody, GotBody string
	// Otherwise Version and Scope name the effect, Want and Got count it;
	// or, with Body, an index write of the version carried GotBody, not
	// the event's body WantBody.
	Version   int
	Scope     string
	Want, Got int
	Body      bool
}

// what names the kind of difference.
func (d difference) what() string {
	switch {
	case d.Document && d.Got == 0:
		return "missing document"
	case d.Document && d.Want == 0:
		return "unexpected document"
	case d.Document && d.Got < d.Want:
		return "stale version won"
	case d.Document:
		return "document differs"
	case d.Body:
		return "write with another body"
	case d.Got == 0:
		return "effect lost"
	case d.Got > d.Want && d.Want > 0:
		return "duplicate effect"
	default:
		return "unexpected effect"
	}
}

func (d difference) String() string {
	if d.Body {
		k := effectKey{d.MessageID, d.Version, d.Scope}
		return fmt.Sprintf("%s: a write with another body than the event's (wrote %q, want %q)", k, d.GotBody, d.WantBody)
	}
	if !d.Document {
		k := effectKey{d.MessageID, d.Version, d.Scope}
		return fmt.Sprintf("%s: %s (want %d, got %d)", k, d.what(), d.Want, d.Got)
	}
	switch {
	case d.Got == 0:
		return fmt.Sprintf("index %s: missing (want v%d)", d.MessageID, d.Want)
	case d.Want == 0:
		return fmt.Sprintf("index %s: unexpected document v%d", d.MessageID, d.Got)
	case d.Got < d.Want:
		return fmt.Sprintf("index %s: holds v%d, want v%d (a stale version won)", d.MessageID, d.Got, d.Want)
	default:
		return fmt.Sprintf("index %s: holds v%d %q, want v%d %q", d.MessageID, d.Got, d.GotBody, d.Want, d.WantBody)
	}
}

// diff compares observed effects and index documents with the model, in a
// stable order: documents first ("a stale version won" says more than the
// effect count it also shows up in), then index writes whose body is not
// their event's (in the order written), then effect counts by (message,
// version, scope).
func (m *model) diff(effects []sinks.Effect, docs map[string]co.Doc) []difference {
	out := m.diffDocs(docs)
	got := map[effectKey]int{}
	wrong := map[effectKey]bool{}
	for _, e := range effects {
		k := effectKey{e.MessageID, e.Version, e.Scope}
		got[k]++
		// Every index write is checked, not only the final document: a
		// write of (message, version) carries that event's body.
		if body, ok := m.bodies[k]; ok && e.Scope == co.ScopeIndex && e.Body != body && !wrong[k] {
			wrong[k] = true
			out = append(out, difference{MessageID: k.messageID, Version: k.version, Scope: k.scope, Body: true, WantBody: body, GotBody: e.Body})
		}
	}
	keys := slices.Collect(maps.Keys(m.expected))
	for k := range got {
		if _, ok := m.expected[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b effectKey) int {
		return cmp.Or(cmp.Compare(a.messageID, b.messageID), cmp.Compare(a.version, b.version), cmp.Compare(a.scope, b.scope))
	})
	for _, k := range keys {
		if want, g := m.expected[k], got[k]; g != want && !(g == 0 && m.optional[k]) {
			out = append(out, difference{MessageID: k.messageID, Version: k.version, Scope: k.scope, Want: want, Got: g})
		}
	}
	return out
}

func (m *model) diffDocs(docs map[string]co.Doc) []difference {
	if !m.scopes[co.ScopeIndex] {
		return nil
	}
	ids := slices.Collect(maps.Keys(m.final))
	for id := range docs {
		if _, ok := m.final[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var out []difference
	for _, id := range ids {
		want, got := m.final[id], docs[id]
		if want != got {
			out = append(out, difference{MessageID: id, Document: true,
				Want: want.Version, Got: got.Version, WantBody: want.Body, GotBody: got.Body})
		}
	}
	return out
}
