// Package reports holds the report model of one run and its writers:
// results.json (the stable, versioned interface), report.md (for a design
// review), report.html (one self-contained file, inline SVG timelines),
// junit.xml (for CI), and the raw histories.
package reports

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// Schema names the results.json format; it changes only with the format.
const Schema = "onceproof.results/v1"

// Exit codes of a run (documented in the README).
const (
	ExitConformant   = 0 // every MUST rule passed (or was not applicable)
	ExitMustFailed   = 1 // a MUST rule failed
	ExitInconclusive = 2 // nothing failed, but some MUST rule is unknown, or nothing ran
	ExitUsage        = 3 // bad command line or configuration
	ExitUnavailable  = 4 // a target could not be started or reached
	ExitNotWritten   = 5 // the run ran, but its report could not be written (a full disk)
)

// Kit identifies the kit that wrote the report.
type Kit struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	GoVersion string `json:"goVersion"`
}

// Run describes the invocation.
type Run struct {
	Command    string    `json:"command"` // redacted
	Started    time.Time `json:"started"`
	Finished   time.Time `json:"finished"`
	DurationMs int64     `json:"durationMs"`
	Suites     []string  `json:"suites"`
	Rules      []string  `json:"rules,omitempty"` // the --rule filter, if any
	// Environment is the --env the run was given (a fleet's shard: prod,
	// staging); tck report merge and gate group targets by it.
	Environment string `json:"environment,omitempty"`
}

// Target is one target of the run as reported.
type Target struct {
	target.Info
	Status string `json:"status"`          // "ran" or "unavailable"
	Error  string `json:"error,omitempty"` // why it could not be started (redacted)
	// ConfigFrom says where the declared settings (Info.Config) come from:
	// ConfigFromProfile when a pipeline profile supplied them; empty when
	// they are the kit's own test settings for its scratch streams, which
	// the report labels as such, never as the team's configuration.
	ConfigFrom string `json:"configFrom,omitempty"`
	// Environment is the environment of the run that checked the target
	// (Run.Environment; in a merged report, its shard's).
	Environment string `json:"environment,omitempty"`
}

// ConfigFromProfile marks a target whose declared settings are the team's,
// from the pipeline profile.
const ConfigFromProfile = "profile"

// Hazard is a risk found by a rule, lifted to the top of the report.
type Hazard struct {
	Target string `json:"target"`
	Rule   string `json:"rule"`
	Text   string `json:"text"`
	// Owner says whose hazard it is: "target" (the target's configuration
	// or behaviour) or "kit" (the kit's own test set-up).
	Owner string `json:"owner"`
}

// Summary counts verdicts and gives the exit code.
type Summary struct {
	Counts      map[verdict.Verdict]int `json:"counts"`
	MustFailed  []string                `json:"mustFailed,omitempty"` // "target rule"
	MustUnknown []string                `json:"mustUnknown,omitempty"`
	ExitCode    int                     `json:"exitCode"`
	Conclusion  string                  `json:"conclusion"`
}

// Report is the whole of results.json.
type Report struct {
	Schema  string   `json:"schema"`
	Kit     Kit      `json:"kit"`
	Run     Run      `json:"run"`
	Targets []Target `json:"targets"`
	Summary Summary  `json:"summary"`
	Hazards []Hazard `json:"hazards,omitempty"`
	// Gaps are what the targets' missing mechanisms leave to the producer,
	// the consumers or the operator, lifted to the first screen: a target
	// is "conformant" with its not-applicable rules, and the reader must
	// still learn who does the broker's job there.
	Gaps []Gap `json:"gaps,omitempty"`
	// Plan is the static analysis of the pipeline profile the run was given
	// (tck run --profile), nil without one.
	Plan    *profile.Plan    `json:"plan,omitempty"`
	Results []verdict.Result `json:"results"`
}

// Finish sorts the results, lifts the hazards and computes the summary.
func (r *Report) Finish() {
	r.Schema = Schema
	// Suites in catalog order, then targets by name, then rules by id.
	sort.SliceStable(r.Results, func(i, j int) bool {
		a, b := r.Results[i], r.Results[j]
		if a.Rule[:2] != b.Rule[:2] {
			return catalog.Less(a.Rule, b.Rule)
		}
		if a.Target != b.Target {
			return a.Target < b.Target
		}
		return catalog.Less(a.Rule, b.Rule)
	})
	r.Hazards = nil
	for _, res := range r.Results {
		if res.Evidence == nil {
			continue
		}
		for _, h := range res.Evidence.Hazards {
			r.Hazards = append(r.Hazards, Hazard{Target: res.Target, Rule: res.Rule, Text: h, Owner: "target"})
		}
		for _, h := range res.Evidence.SetupHazards {
			r.Hazards = append(r.Hazards, Hazard{Target: res.Target, Rule: res.Rule, Text: h, Owner: "kit"})
		}
	}
	sort.SliceStable(r.Hazards, func(i, j int) bool { return r.Hazards[i].Target < r.Hazards[j].Target })
	r.Gaps = gapsOf(r.Results)
	// Empty lists, never null: a reader iterates without a nil check.
	if r.Results == nil {
		r.Results = []verdict.Result{}
	}
	if r.Targets == nil {
		r.Targets = []Target{}
	}
	if r.Run.Suites == nil {
		r.Run.Suites = []string{}
	}
	r.Summary = Summarize(r.Results, r.Targets)
	if len(r.Results) == 0 && len(r.Targets) == 0 && r.Plan != nil {
		// A static analysis alone: its verdict is the plan's.
		r.Summary = planSummary(r.Plan)
	}
	r.planHazards()
	if len(r.Run.Rules) > 0 && r.Summary.ExitCode == ExitConformant {
		// A filtered run certifies only what it ran.
		ran := 0
		for _, res := range r.Results {
			if res.Verdict != verdict.Skipped {
				ran++
			}
		}
		r.Summary.Conclusion = fmt.Sprintf("partial: %d of %d rules run (filtered by --rule); every MUST rule that ran and applies passed", ran, len(r.Results))
	}
}

// Validate rejects a report that names a verdict the kit does not know.
func (r *Report) Validate() error {
	for _, res := range r.Results {
		switch res.Verdict {
		case verdict.Pass, verdict.Fail, verdict.Unknown, verdict.NotApplicable, verdict.Skipped:
		default:
			return fmt.Errorf("rule %s on %s: unknown verdict %q (want pass, fail, unknown, not-applicable or skipped)", res.Rule, res.Target, res.Verdict)
		}
		if _, ok := catalog.Lookup(res.Rule); !ok {
			return fmt.Errorf("unknown rule %q on %s", res.Rule, res.Target)
		}
	}
	return nil
}

// Summarize decides the exit code. A failed MUST wins (1): it is a definite
// finding even when another target could not be reached; then an unreachable
// target (4); then anything undecided (2): an unknown MUST, or a run in which
// no rule was decided at all. SHOULD and MAY failures are reported, not fatal.
func Summarize(results []verdict.Result, targets []Target) Summary {
	s := Summary{Counts: map[verdict.Verdict]int{}}
	decided := 0
	for _, r := range results {
		s.Counts[r.Verdict]++
		if r.Verdict == verdict.Pass || r.Verdict == verdict.Fail {
			decided++
		}
		if r.Level != string(catalog.Must) {
			continue
		}
		switch r.Verdict {
		case verdict.Fail:
			s.MustFailed = append(s.MustFailed, r.Target+" "+r.Rule)
		case verdict.Unknown:
			s.MustUnknown = append(s.MustUnknown, r.Target+" "+r.Rule)
		}
	}
	unavailable := 0
	for _, t := range targets {
		if t.Status == "unavailable" {
			unavailable++
		}
	}
	switch {
	case len(s.MustFailed) > 0:
		s.ExitCode, s.Conclusion = ExitMustFailed, "not conformant: a MUST rule failed"
	case unavailable > 0:
		s.ExitCode, s.Conclusion = ExitUnavailable, "incomplete: a target could not be started or reached"
	case len(s.MustUnknown) > 0:
		s.ExitCode, s.Conclusion = ExitInconclusive, "inconclusive: a MUST rule could not be decided"
	case decided == 0:
		s.ExitCode, s.Conclusion = ExitInconclusive, "inconclusive: no rule was decided"
	default:
		s.ExitCode, s.Conclusion = ExitConformant, "conformant: every MUST rule that applies passed"
	}
	return s
}

// Gap is one target's missing mechanism with what it leaves to others
// (catalog.Gap) and the not-applicable rules that needed it.
type Gap struct {
	Target string `json:"target"`
	catalog.Gap
	Rules []string `json:"rules"`
}

// Label heads the gap's line: "not protected" for a mechanism the target
// lacks, "not measured" for one the kit could not exercise.
func (g Gap) Label() string {
	if g.Kind == catalog.GapUnmeasured {
		return "not measured"
	}
	return "not protected"
}

// Line is the gap in one line, as the CLI's closing summary says it.
func (g Gap) Line() string {
	return fmt.Sprintf("%s on %s: %s (%s not applicable): %s; left to the %s: %s", g.Label(), g.Target, g.Missing, strings.Join(g.Rules, ", "), g.Leaves, g.Who, g.Compensate)
}

// gapsOf reads the gaps from the not-applicable results' missing
// capabilities: by target, then in the catalog's table order.
func gapsOf(results []verdict.Result) []Gap {
	var out []Gap
	at := map[[2]string]int{}
	for _, res := range results {
		if res.Verdict != verdict.NotApplicable {
			continue
		}
		for _, c := range res.Missing {
			g, ok := catalog.GapOf(catalog.Capability(c))
			if !ok {
				continue
			}
			k := [2]string{res.Target, c}
			if i, seen := at[k]; seen {
				if !slices.Contains(out[i].Rules, res.Rule) {
					out[i].Rules = append(out[i].Rules, res.Rule)
				}
				continue
			}
			at[k] = len(out)
			out = append(out, Gap{Target: res.Target, Gap: g, Rules: []string{res.Rule}})
		}
	}
	order := map[catalog.Capability]int{}
	for i, g := range catalog.Gaps() {
		order[g.Capability] = i
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Target != out[j].Target {
			return out[i].Target < out[j].Target
		}
		return order[out[i].Capability] < order[out[j].Capability]
	})
	for i := range out {
		sort.Slice(out[i].Rules, func(a, b int) bool { return catalog.Less(out[i].Rules[a], out[i].Rules[b]) })
	}
	return out
}
