package reports

import (
	"fmt"
	"html/template"
	"sort"
	"strings"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// view is the report as both report.md and report.html lay it out: derived
// from the Report only, so the two formats say the same things.
type view struct {
	R        *Report
	Summary  []summaryRow
	Matrices []matrix
	Env      []envRow
	// Hazards by whose they are.
	TargetHazards, KitHazards []hazardView
	Plan                      *planView
	// All is every result; Rules those that ran (each a section of its
	// own); NotChecked the not-applicable and skipped ones, grouped by
	// target and reason (one line per group, not a section per rule).
	All   []ruleView
	Rules []ruleView
	// PassesOmitted counts the passing results of a report too large for a
	// section and a verdicts row each (a merged fleet, sectionLimit): they
	// are in the matrix, their evidence in their shards' reports.
	PassesOmitted int
	NotChecked    []notChecked
	// Failures are the failed and undecided MUST rules, for the first
	// screen: each with its one-line reason and a link to its section.
	Failures []ruleView
	Glossary []Term
}

// notChecked is a group of rules one target did not check for one reason.
type notChecked struct {
	Target  string
	Verdict verdict.Verdict
	Reason  string
	Rules   []ruleView
}

type summaryRow struct {
	Suite, Target, Status string
	Counts                map[verdict.Verdict]int
	MustFailed, MustUnk   int
}

type matrix struct {
	Suite     string
	Targets   []string
	Rows      []matrixRow
	Footnotes []string // reasons of the not-applicable cells, numbered from 1
}

type matrixRow struct {
	Rule, Level, Title string
	Cells              []matrixCell
}

type matrixCell struct {
	Verdict verdict.Verdict
	Reason  string
	Anchor  string
	Note    int // footnote number of a not-applicable cell
}

type envRow struct {
	Target, Mode, Version, Scale, Settings, SettingsFrom string
	Server                                               []string // settings as read from the server
	Compared                                             []comparedIn
	SettingsList                                         []string
	Notes                                                []string
	Status                                               string
}

// comparedIn points at a rule that compared settings read from the server.
type comparedIn struct {
	Rule, Anchor string
	N            int
}

type hazardView struct {
	Hazard
	Whose  string // the attribution in words
	Anchor string
}

type planView struct {
	*profile.Plan
	Hazards []planHazard
}

type planHazard struct {
	profile.Hazard
	N        int
	Contract string
	Source   string
	Anchor   string // the rule's section when the run checked it
	SVG      template.HTML
}

type ruleView struct {
	verdict.Result
	Anchor, Contract, Source, Duration string
	Figures                            []figureView
	Comparisons                        []verdict.Comparison
	DeclaredLabel                      string
	Hazards                            []hazardView
	Notes                              []string
	Timeline                           template.HTML
	// Shown: the timeline is drawn in the open (a timed rule, a crash
	// window, a fail or unknown), not folded into the evidence.
	Shown bool
	// DrawnFor is the section where this passing rule's timeline is
	// drawn, for another target (DrawnTarget), when it is not drawn here.
	DrawnFor, DrawnTarget string
	Ops                   []opRow
	OpsLabel              string
	OpsTotal              int
	History               string
}

type figureView struct{ Name, Value string }

type opRow struct {
	Start, End, Actor, Action, Value, Outcome, Result, Shape string
}

func anchor(targetName, rule string) string {
	return "r-" + unsafeChars.ReplaceAllString(targetName, "_") + "-" + strings.ReplaceAll(rule, ".", "_")
}

// kitSettings says whether a target's declared settings are the kit's own
// test settings rather than the team's (a profile supplies the team's).
// A profile-driven adapter also names the profile in Config["profile"].
func kitSettings(t Target) bool {
	return t.ConfigFrom != ConfigFromProfile && t.Config["profile"] == ""
}

func settingsFrom(t Target) string {
	if kitSettings(t) {
		return "kit test settings"
	}
	return "declared by the pipeline profile"
}

// whose puts a hazard's attribution in words.
func whose(h Hazard, t Target) string {
	switch h.Owner {
	case "kit":
		return "the kit's test set-up (not a finding about the target)"
	case "profile":
		return "the pipeline profile (the team's declared design)"
	}
	if t.Mode == target.Embedded || t.Mode == target.Container {
		if kitSettings(t) {
			return "the target's behaviour, on a server the kit started with kit test settings"
		}
		return "the target's behaviour, on a server the kit started with the profile's declared settings"
	}
	return "the target's configuration or behaviour"
}

// sectionLimit is the most results a report gives a section each; past it
// (a fleet's merged report of thousands of targets) only the results that
// did not pass get one, or the report takes seconds to write and tens of
// megabytes to open.
const sectionLimit = 2000

func buildView(r *Report) *view {
	v := &view{R: r, Glossary: Glossary}
	tgt := map[string]Target{}
	for _, t := range r.Targets {
		tgt[t.Name] = t
	}
	// Summary by suite and target, in report order.
	idx := map[string]int{}
	for _, t := range r.Targets {
		idx[t.Name] = len(v.Summary)
		v.Summary = append(v.Summary, summaryRow{Suite: t.Suite, Target: t.Name, Status: t.Status, Counts: map[verdict.Verdict]int{}})
	}
	for _, res := range r.Results {
		i, ok := idx[res.Target]
		if !ok {
			idx[res.Target] = len(v.Summary)
			i = len(v.Summary)
			v.Summary = append(v.Summary, summaryRow{Suite: res.Suite, Target: res.Target, Status: "ran", Counts: map[verdict.Verdict]int{}})
		}
		row := &v.Summary[i]
		row.Counts[res.Verdict]++
		if res.Level == string(catalog.Must) {
			switch res.Verdict {
			case verdict.Fail:
				row.MustFailed++
			case verdict.Unknown:
				row.MustUnk++
			}
		}
	}
	sort.SliceStable(v.Summary, func(i, j int) bool { return suiteOrder(v.Summary[i].Suite) < suiteOrder(v.Summary[j].Suite) })
	v.Matrices = matrices(r)
	// Grouped once: a merged fleet report holds thousands of targets.
	byTarget := map[string][]verdict.Result{}
	for _, res := range r.Results {
		byTarget[res.Target] = append(byTarget[res.Target], res)
	}
	for _, t := range r.Targets {
		v.Env = append(v.Env, envOf(t, byTarget[t.Name]))
	}
	for _, h := range r.Hazards {
		hv := hazardView{Hazard: h, Whose: whose(h, tgt[h.Target]), Anchor: anchor(h.Target, h.Rule)}
		if h.Owner == "kit" {
			v.KitHazards = append(v.KitHazards, hv)
		} else {
			v.TargetHazards = append(v.TargetHazards, hv)
		}
	}
	ran := map[string]string{}
	for _, res := range r.Results {
		if _, ok := ran[res.Rule]; !ok {
			ran[res.Rule] = anchor(res.Target, res.Rule)
		}
	}
	if r.Plan != nil {
		pv := &planView{Plan: r.Plan}
		for i, h := range r.Plan.Hazards {
			ph := planHazard{Hazard: h, N: i + 1, Anchor: ran[h.Rule], SVG: marksTimeline(h.Timeline)}
			if rule, ok := catalog.Lookup(h.Rule); ok {
				ph.Contract, ph.Source = rule.Contract, rule.Source
			}
			pv.Hazards = append(pv.Hazards, ph)
		}
		v.Plan = pv
	}
	group := map[[3]string]int{}
	drawn := map[string]string{} // rule -> the target its passing timeline is drawn for
	for _, res := range r.Results {
		rv := ruleOf(res, tgt[res.Target], r.Hazards)
		if res.Verdict == verdict.Pass && rv.Timeline != "" {
			// A passing rule's timeline is drawn once, for the first
			// target that passed it: the others' look the same, and
			// histories/ has each.
			if first, ok := drawn[res.Rule]; ok {
				rv.Timeline, rv.DrawnFor = "", anchor(first, res.Rule)
				rv.DrawnTarget = first
			} else {
				drawn[res.Rule] = res.Target
			}
		}
		large := len(r.Results) > sectionLimit
		if !large || res.Verdict != verdict.Pass {
			v.All = append(v.All, rv)
		}
		switch res.Verdict {
		case verdict.NotApplicable, verdict.Skipped:
			key := [3]string{res.Target, string(res.Verdict), res.Reason}
			i, ok := group[key]
			if !ok {
				i = len(v.NotChecked)
				group[key] = i
				v.NotChecked = append(v.NotChecked, notChecked{Target: res.Target, Verdict: res.Verdict, Reason: res.Reason})
			}
			v.NotChecked[i].Rules = append(v.NotChecked[i].Rules, rv)
			continue
		}
		if res.Verdict == verdict.Pass && large {
			v.PassesOmitted++
			continue
		}
		v.Rules = append(v.Rules, rv)
		if res.Level == string(catalog.Must) && (res.Verdict == verdict.Fail || res.Verdict == verdict.Unknown) {
			v.Failures = append(v.Failures, rv)
		}
	}
	return v
}

// OneLine is a reason as the first screen shows it: one line, cut short.
func (rv ruleView) OneLine() string { return clipReason(rv.Reason, 220) }

// Brief is a reason as the verdicts table shows it; the rule's section
// has it whole.
func (rv ruleView) Brief() string { return clipReason(rv.Reason, 120) }

func clipReason(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}

func suiteOrder(s string) int {
	for i, x := range catalog.Suites() {
		if x == s {
			return i
		}
	}
	return len(catalog.Suites())
}

// matrices: one per suite that ran on two targets or more, rules as rows,
// targets as columns.
func matrices(r *Report) []matrix {
	var out []matrix
	for _, suite := range catalog.Suites() {
		var targets []string
		seen := map[string]bool{}
		cells := map[[2]string]verdict.Result{}
		var rules []string
		seenRule := map[string]bool{}
		for _, res := range r.Results {
			if res.Suite != suite && !strings.HasPrefix(res.Rule, strings.ToUpper(suite[:2])) {
				continue
			}
			if !seen[res.Target] {
				seen[res.Target] = true
				targets = append(targets, res.Target)
			}
			if !seenRule[res.Rule] {
				seenRule[res.Rule] = true
				rules = append(rules, res.Rule)
			}
			cells[[2]string{res.Rule, res.Target}] = res
		}
		if len(targets) < 2 {
			continue
		}
		sort.SliceStable(rules, func(i, j int) bool { return catalog.Less(rules[i], rules[j]) })
		m := matrix{Suite: suite, Targets: targets}
		notes := map[string]int{}
		for _, id := range rules {
			rule, _ := catalog.Lookup(id)
			row := matrixRow{Rule: id, Level: string(rule.Level), Title: rule.Title}
			for _, t := range targets {
				res, ok := cells[[2]string{id, t}]
				if !ok {
					row.Cells = append(row.Cells, matrixCell{Verdict: Absent, Reason: "not run on this target"})
					continue
				}
				c := matrixCell{Verdict: res.Verdict, Reason: res.Reason, Anchor: anchor(t, id)}
				if res.Verdict == verdict.NotApplicable {
					key := t + ": " + res.Reason
					if notes[key] == 0 {
						m.Footnotes = append(m.Footnotes, key)
						notes[key] = len(m.Footnotes)
					}
					c.Note = notes[key]
				}
				row.Cells = append(row.Cells, c)
			}
			m.Rows = append(m.Rows, row)
		}
		out = append(out, m)
	}
	return out
}

// serverKeys are the settings an adapter reads from the server rather than
// sets: "sync" (the NATS adapters read it from /varz), and by convention any
// key written "server.NAME".
func serverKey(k string) (string, bool) {
	if strings.HasPrefix(k, "server.") {
		return strings.TrimPrefix(k, "server."), true
	}
	return k, k == "sync"
}

func envOf(t Target, results []verdict.Result) envRow {
	e := envRow{Target: t.Name, Mode: where(t), Version: t.Version, Notes: t.Notes, Status: t.Status, SettingsFrom: settingsFrom(t)}
	if t.Emulator {
		e.Version += " (emulator)"
	}
	if t.Mutant {
		e.Status += " (a mutant: deliberately broken)"
	}
	if t.Error != "" {
		e.Status += ": " + t.Error
	}
	var own []string
	keys := make([]string, 0, len(t.Config))
	for k := range t.Config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		val := t.Config[k]
		if name, ok := serverKey(k); ok {
			if _, read := t.Server[name]; !read {
				e.Server = append(e.Server, name+" = "+val)
			}
			continue
		}
		if k == "clockScale" {
			e.Scale = val
			continue
		}
		own = append(own, k+"="+val)
	}
	e.Settings, e.SettingsList = strings.Join(own, ", "), own
	skeys := make([]string, 0, len(t.Server))
	for k := range t.Server {
		skeys = append(skeys, k)
	}
	sort.Strings(skeys)
	for _, k := range skeys {
		if k == "version" && strings.Contains(e.Version, t.Server[k]) {
			continue
		}
		e.Server = append(e.Server, k+" = "+t.Server[k])
	}
	// Per-stream settings read from the server are shown where they were
	// compared, in the rule's section; here only a pointer to them.
	for _, res := range results {
		if res.Target != t.Name || res.Evidence == nil {
			continue
		}
		n := 0
		for _, c := range res.Evidence.Comparisons {
			if c.Source == "server" {
				n++
			}
		}
		if n > 0 {
			e.Compared = append(e.Compared, comparedIn{res.Rule, anchor(res.Target, res.Rule), n})
		}
	}
	if e.Scale == "" {
		e.Scale = "real time (x1)"
	}
	return e
}

func ruleOf(res verdict.Result, t Target, hz []Hazard) ruleView {
	rv := ruleView{Result: res, Anchor: anchor(res.Target, res.Rule), Duration: runDuration(res.DurationMs),
		History: DirHistories + "/" + HistoryFile(res.Target, res.Rule)}
	if rule, ok := catalog.Lookup(res.Rule); ok {
		rv.Contract, rv.Source = rule.Contract, rule.Source
	}
	for _, h := range hz {
		if h.Target == res.Target && h.Rule == res.Rule {
			rv.Hazards = append(rv.Hazards, hazardView{Hazard: h, Whose: whose(h, t)})
		}
	}
	ev := res.Evidence
	if ev == nil {
		return rv
	}
	kit := kitSettings(t)
	rv.DeclaredLabel = "declared (pipeline profile)"
	if kit {
		rv.DeclaredLabel = "declared (kit test settings)"
	}
	for _, f := range ev.Figures {
		name := f.Name
		if kit && strings.HasPrefix(name, "declared ") {
			name = strings.TrimPrefix(name, "declared ") + " (kit test setting)"
		} else if kit && strings.HasPrefix(name, "declared: ") {
			name = strings.TrimPrefix(name, "declared: ") + " (kit test setting)"
		}
		rv.Figures = append(rv.Figures, figureView{name, figureText(f)})
	}
	rv.Comparisons = ev.Comparisons
	for _, n := range ev.Notes {
		if n != res.Reason {
			rv.Notes = append(rv.Notes, n)
		}
	}
	ops, label := ev.Minimal, "smallest failing history"
	if len(ops) == 0 {
		ops, label = ev.Timeline, "timeline"
	}
	if len(ops) > 0 {
		decisive := res.Verdict == verdict.Fail || res.Verdict == verdict.Unknown
		rv.OpsLabel, rv.OpsTotal = label, len(ops)
		rv.Shown = decisive
		for _, f := range ev.Figures {
			if w, ok := f.Value.(float64); ok && f.Name == "wait by definition" && w > 0 {
				rv.Shown = true
			}
			if w, ok := f.Value.(int); ok && f.Name == "wait by definition" && w > 0 {
				rv.Shown = true
			}
		}
		for _, op := range ops {
			if s := opShape(op); s == shCrash || s == shLost || s == shRedeliver {
				rv.Shown = true
				break
			}
		}
		// What a reader needs to see is drawn: a failure's or an unknown's
		// history whole (up to maxDrawn) with its operations listed; a
		// passing rule's timeline only where time is what it checks (a
		// wait, a crash window), its first operations only, and no list.
		// histories/ has every operation of every rule. This keeps the
		// default report small (docs/report.md).
		switch {
		case decisive:
			rv.Timeline = opsTimeline(ops, ev.Figures, t.Config, maxDrawn)
		case rv.Shown:
			rv.Timeline = opsTimeline(ops, ev.Figures, t.Config, maxDrawnPassing)
		}
		if !decisive {
			return rv
		}
		var end = ops[0].End
		for _, op := range ops {
			end = max(end, op.End, op.Start)
		}
		f := offsetFormat(end)
		for i, op := range ops {
			if i == maxOpsShown {
				break
			}
			rv.Ops = append(rv.Ops, opRow{Start: f(op.Start), End: f(max(op.End, op.Start)), Actor: op.Actor, Action: op.Action,
				Value: op.Value, Outcome: string(op.Outcome), Result: op.Result, Shape: drawnAs(op)})
		}
	}
	return rv
}

// drawnAs is the shape an operation is drawn as, and its mark.
func drawnAs(op history.Op) string {
	if op.Mark != "" {
		return shapeName(opShape(op)) + ", marked: " + op.Mark
	}
	return shapeName(opShape(op))
}

func shapeName(s shape) string {
	for _, l := range legendOrder {
		if l.s == s {
			return l.text
		}
	}
	return string(s)
}

// opLine is one operation for report.md, at the timeline's resolution.
func opLine(r opRow) string {
	return fmt.Sprintf("%10s  %-12s %-14s %-30s %-4s %s  [%s]", r.Start, r.Actor, r.Action, r.Value, r.Outcome, r.Result, r.Shape)
}
