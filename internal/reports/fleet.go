package reports

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/strictyaml"
	"github.com/onceproof/tck/internal/verdict"
)

// Shard is one report of a fleet (a `tck run`, often of one target, in
// one environment) and where it was read from.
type Shard struct {
	Path   string
	Report *Report
}

// ReadShard reads a shard's results.json (a report folder or the file)
// for a fleet's merge or gate: everything but the histories and notes of
// its evidence (timeline, minimal history, notes), which stay in the
// shard's own report. A shard of a few hundred KB is mostly history; a
// thousand of them read whole would hold gigabytes.
func ReadShard(path string) (*Report, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, FileJSON)
	}
	data, err := strictyaml.ReadFile(path, "results.json", MaxResultsBytes)
	if err != nil {
		return nil, err
	}
	// The outer fields shadow the embedded ones of the same JSON name, so
	// the decoder skips what the light types leave out.
	type lightEvidence struct {
		Figures      []verdict.Figure     `json:"figures,omitempty"`
		Hazards      []string             `json:"hazards,omitempty"`
		SetupHazards []string             `json:"setupHazards,omitempty"`
		Comparisons  []verdict.Comparison `json:"comparisons,omitempty"`
	}
	type lightResult struct {
		verdict.Result
		Evidence *lightEvidence `json:"evidence"`
	}
	var lr struct {
		Report
		Results []lightResult `json:"results"`
	}
	if err := json.Unmarshal(data, &lr); err != nil {
		return nil, fmt.Errorf("%s: not a results.json: %v", path, err)
	}
	data = nil
	r := lr.Report
	if r.Schema != Schema {
		return nil, fmt.Errorf("%s: schema %q, this kit reads %q", path, r.Schema, Schema)
	}
	r.Results = make([]verdict.Result, len(lr.Results))
	for i, x := range lr.Results {
		res := x.Result
		if e := x.Evidence; e != nil {
			res.Evidence = &verdict.Evidence{Figures: e.Figures, Hazards: e.Hazards, SetupHazards: e.SetupHazards, Comparisons: e.Comparisons}
		}
		r.Results[i] = res
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	r.Finish()
	return &r, nil
}

// picked is one target at its last run across the shards.
type picked struct {
	shard   *Shard
	env     string
	target  Target
	results []verdict.Result
}

// qualified names a target with its environment, so one broker name in
// two environments stays two targets of a merged report.
func qualified(env, name string) string {
	if env == "" || strings.HasPrefix(name, env+"/") {
		return name
	}
	return env + "/" + name
}

// latest picks every (environment, target) at its last run: the shard
// that finished last wins, a later argument on a tie (a re-run given
// after the run it replaces).
func latest(shards []Shard) []picked {
	index := map[string]int{}
	var out []picked
	for i := range shards {
		sh := &shards[i]
		byTarget := map[string][]verdict.Result{}
		for _, res := range sh.Report.Results {
			byTarget[res.Target] = append(byTarget[res.Target], res)
		}
		for _, t := range sh.Report.Targets {
			env := t.Environment
			if env == "" {
				env = sh.Report.Run.Environment
			}
			key := env + "\x00" + qualified(env, t.Name)
			p := picked{shard: sh, env: env, target: t, results: byTarget[t.Name]}
			if k, ok := index[key]; ok {
				if sh.Report.Run.Finished.Before(out[k].shard.Report.Run.Finished) {
					continue
				}
				out[k] = p
				continue
			}
			index[key] = len(out)
			out = append(out, p)
		}
	}
	return out
}

// Merge makes one report of the shards: every (environment, target) at
// its last run, named ENV/NAME when its shard has an environment, with
// the same verdict precedence and exit code as one run of those targets.
// A profile's plan is kept when every shard that carries one carries the
// same profile; different profiles stay in their shards' own reports and
// each of their targets notes it.
func Merge(shards []Shard, kit Kit, command string) *Report {
	m := &Report{Kit: kit, Run: Run{Command: command}}
	suites := map[string]bool{}
	var rules []string
	filtered := len(shards) > 0
	plans := map[string]bool{}
	for _, sh := range shards {
		r := sh.Report
		if m.Run.Started.IsZero() || r.Run.Started.Before(m.Run.Started) {
			m.Run.Started = r.Run.Started
		}
		if r.Run.Finished.After(m.Run.Finished) {
			m.Run.Finished = r.Run.Finished
		}
		for _, s := range r.Run.Suites {
			suites[s] = true
		}
		if len(r.Run.Rules) == 0 {
			filtered = false
		}
		rules = append(rules, r.Run.Rules...)
		if r.Plan != nil {
			plans[r.Plan.File+"\x00"+r.Plan.Profile] = true
			if m.Plan == nil {
				m.Plan = r.Plan
			}
		}
	}
	if len(plans) > 1 {
		m.Plan = nil
	}
	for _, p := range latest(shards) {
		t := p.target
		t.Name = qualified(p.env, t.Name)
		t.Environment = p.env
		t.Notes = append(slices.Clip(t.Notes), fmt.Sprintf("from the shard %s (run finished %s, kit %s): its rules' histories and notes are in that shard's report", p.shard.Path, p.shard.Report.Run.Finished.UTC().Format(time.RFC3339), p.shard.Report.Kit.Version))
		if pl := p.shard.Report.Plan; pl != nil && len(pl.Hazards) > 0 && m.Plan == nil {
			t.Notes = append(t.Notes, fmt.Sprintf("its shard's profile %s has %d hazard(s): see that shard's report", pl.File, len(pl.Hazards)))
		}
		m.Targets = append(m.Targets, t)
		for _, res := range p.results {
			res.Target = t.Name
			m.Results = append(m.Results, res)
		}
	}
	for _, s := range catalog.Suites() {
		if suites[s] {
			m.Run.Suites = append(m.Run.Suites, s)
		}
	}
	if filtered {
		slices.Sort(rules)
		m.Run.Rules = slices.Compact(rules)
	}
	if !m.Run.Finished.IsZero() {
		m.Run.DurationMs = m.Run.Finished.Sub(m.Run.Started).Milliseconds()
	}
	m.Finish()
	return m
}

// Blocker is what keeps one target of an environment from being
// conformant at its last run.
type Blocker struct {
	Target  string `json:"target"`
	Rule    string `json:"rule,omitempty"`
	Verdict string `json:"verdict"` // fail, unknown, unavailable, hazards
	Reason  string `json:"reason"`
	Shard   string `json:"shard"`
}

// GateResult answers "can this environment deploy": every target of it at
// its last run, and what blocks.
type GateResult struct {
	Env      string    `json:"environment"`
	Require  string    `json:"require"`
	Targets  []string  `json:"targets"`
	Blockers []Blocker `json:"blockers"`
	// NotRun counts required rules skipped at a target's last run (a
	// --rule filter): reported, not blocking, as in a run's summary.
	NotRun   int    `json:"notRun"`
	ExitCode int    `json:"exitCode"`
	Line     string `json:"conclusion"`
}

// Gate decides whether every target of env is conformant at its last run
// across the shards, counting the rules at require's level and above (MUST
// by default): a failed required rule or a profile hazard exits 1, an
// unreachable target 4, an undecided required rule 2, as a run does; an
// environment with no target is 2, naming the environments there are.
func Gate(shards []Shard, env string, require catalog.Level) GateResult {
	g := GateResult{Env: env, Require: string(require), Targets: []string{}, Blockers: []Blocker{}}
	need := levels(require)
	envs := map[string]bool{}
	var failed, unavailable, unknown bool
	for _, p := range latest(shards) {
		envs[p.env] = true
		if p.env != env {
			continue
		}
		name := qualified(p.env, p.target.Name)
		g.Targets = append(g.Targets, name)
		if p.target.Status == "unavailable" {
			unavailable = true
			g.Blockers = append(g.Blockers, Blocker{Target: name, Verdict: "unavailable", Reason: p.target.Error, Shard: p.shard.Path})
		}
		if pl := p.shard.Report.Plan; pl != nil && len(pl.Hazards) > 0 {
			failed = true
			h := pl.Hazards[0]
			g.Blockers = append(g.Blockers, Blocker{Target: name, Verdict: "hazards", Shard: p.shard.Path,
				Reason: fmt.Sprintf("the declared pipeline (profile %s) has %d hazard(s); first: %s %s at %s:%d", pl.Profile, len(pl.Hazards), h.Rule, h.Check, pl.File, h.Line)})
		}
		for _, res := range p.results {
			if !need[res.Level] {
				continue
			}
			switch res.Verdict {
			case verdict.Fail:
				failed = true
			case verdict.Unknown:
				unknown = true
			case verdict.Skipped:
				g.NotRun++
				continue
			default:
				continue
			}
			g.Blockers = append(g.Blockers, Blocker{Target: name, Rule: res.Rule, Verdict: string(res.Verdict), Reason: res.Reason, Shard: p.shard.Path})
		}
	}
	blocked := map[string]bool{}
	for _, b := range g.Blockers {
		blocked[b.Target] = true
	}
	switch {
	case len(g.Targets) == 0:
		var names []string
		for e := range envs {
			if e == "" {
				e = `"" (runs without --env)`
			}
			names = append(names, e)
		}
		slices.Sort(names)
		g.ExitCode = ExitInconclusive
		g.Line = fmt.Sprintf("no target of environment %q in the %d shard(s) given (environments there: %s)", env, len(shards), strings.Join(names, ", "))
		return g
	case failed:
		g.ExitCode = ExitMustFailed
	case unavailable:
		g.ExitCode = ExitUnavailable
	case unknown:
		g.ExitCode = ExitInconclusive
	}
	if g.ExitCode == ExitConformant {
		g.Line = fmt.Sprintf("deployable: every one of %d target(s) of %s is conformant at its last run (%s rules)", len(g.Targets), env, require)
	} else {
		g.Line = fmt.Sprintf("blocked: %d of %d target(s) of %s not conformant at their last run (%s rules)", len(blocked), len(g.Targets), env, require)
	}
	return g
}

// levels are the rule levels a gate at require counts.
func levels(require catalog.Level) map[string]bool {
	need := map[string]bool{string(catalog.Must): true}
	switch require {
	case catalog.May:
		need[string(catalog.May)] = true
		fallthrough
	case catalog.Should:
		need[string(catalog.Should)] = true
	}
	return need
}
