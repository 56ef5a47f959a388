// Package verdict holds the outcome of checking one rule against one target:
// the verdict, its reason and the evidence behind it.
package verdict

import (
	"fmt"
	"sort"
	"sync"

	"github.com/onceproof/tck/internal/history"
)

// Verdict of one rule on one target. Unknown is never folded into Pass.
type Verdict string

const (
	Pass          Verdict = "pass"
	Fail          Verdict = "fail"
	Unknown       Verdict = "unknown"        // the kit could not decide
	NotApplicable Verdict = "not-applicable" // the target lacks a capability the rule needs
	Skipped       Verdict = "skipped"        // filtered out, or the run was interrupted
)

// Figure is one measured or declared value.
type Figure struct {
	Name  string `json:"name"`
	Value any    `json:"value"`
	Unit  string `json:"unit,omitempty"`
}

// Evidence is what a verdict rests on. It is filled by the spec body while the
// rule runs and is safe for concurrent use.
type Evidence struct {
	mu       sync.Mutex
	Timeline []history.Op `json:"timeline,omitempty"`
	Figures  []Figure     `json:"figures,omitempty"`
	Notes    []string     `json:"notes,omitempty"`
	Hazards  []string     `json:"hazards,omitempty"`
	// Minimal is, for a fail, the smallest history that shows it.
	Minimal []history.Op `json:"minimal,omitempty"`
	// SetupHazards are risks of the kit's own test set-up (its scratch
	// server, its shortened windows), not of the target's configuration.
	SetupHazards []string `json:"setupHazards,omitempty"`
	// Comparisons are the target's declared settings against what the kit
	// read from the server or measured: declared vs measured.
	Comparisons []Comparison `json:"comparisons,omitempty"`
}

// Comparison is one declared setting against the value the kit read from the
// server ("server") or measured with a workload ("measured").
type Comparison struct {
	Setting  string `json:"setting"`
	Declared string `json:"declared"`
	Actual   string `json:"actual"`
	Source   string `json:"source"` // "server" or "measured"
	Match    bool   `json:"match"`
}

// Compare records one declared-vs-actual pair (replacing an earlier one of
// the same setting).
func (e *Evidence) Compare(c Comparison) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range e.Comparisons {
		if e.Comparisons[i].Setting == c.Setting {
			e.Comparisons[i] = c
			return
		}
	}
	e.Comparisons = append(e.Comparisons, c)
}

// SetupHazard names a risk that comes from the kit's own test set-up, so a
// reader does not take it for a finding about the target.
func (e *Evidence) SetupHazard(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.SetupHazards = append(e.SetupHazards, fmt.Sprintf(format, args...))
}

// Figure records a value (replacing an earlier one of the same name).
func (e *Evidence) Figure(name string, value any, unit string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range e.Figures {
		if e.Figures[i].Name == name {
			e.Figures[i] = Figure{name, value, unit}
			return
		}
	}
	e.Figures = append(e.Figures, Figure{name, value, unit})
}

// Notef adds a line of explanation.
func (e *Evidence) Notef(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.Notes = append(e.Notes, fmt.Sprintf(format, args...))
}

// Hazard names a risk the run found that is not (only) a rule failure, e.g.
// "a retry with a fresh message id was stored twice".
func (e *Evidence) Hazard(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.Hazards = append(e.Hazards, fmt.Sprintf(format, args...))
}

// Record attaches a timeline (replacing the previous one).
func (e *Evidence) Record(ops []history.Op) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.Timeline = ops
}

// Smallest attaches the smallest history that shows a failure.
func (e *Evidence) Smallest(ops []history.Op) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.Minimal = ops
}

// Snapshot returns a copy that is safe to serialize.
func (e *Evidence) Snapshot() *Evidence {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	c := &Evidence{
		Timeline: append([]history.Op(nil), e.Timeline...),
		Figures:  append([]Figure(nil), e.Figures...),
		Notes:    append([]string(nil), e.Notes...),
		Hazards:  append([]string(nil), e.Hazards...),
		Minimal:  append([]history.Op(nil), e.Minimal...),

		SetupHazards: append([]string(nil), e.SetupHazards...),
		Comparisons:  append([]Comparison(nil), e.Comparisons...),
	}
	return c
}

// Result is one row of a report.
type Result struct {
	Rule    string  `json:"rule"`
	Suite   string  `json:"suite"`
	Target  string  `json:"target"`
	Level   string  `json:"level"`
	Kind    string  `json:"kind"`
	Title   string  `json:"title"`
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason"`
	// Missing are the capabilities a not-applicable rule needed and the
	// target lacked, as the catalog names them (the report's "not protected"
	// lines are read from them, not from the reason's words).
	Missing    []string  `json:"missing,omitempty"`
	DurationMs float64   `json:"durationMs"`
	Evidence   *Evidence `json:"evidence"`
}

// Sort orders results by target, then by rule id as given by less.
func Sort(rs []Result, less func(a, b string) bool) {
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].Target != rs[j].Target {
			return rs[i].Target < rs[j].Target
		}
		return less(rs[i].Rule, rs[j].Rule)
	})
}
