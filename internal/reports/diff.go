package reports

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/safetext"
	"github.com/onceproof/tck/internal/verdict"
)

// ChangeKind sorts a verdict change by what it means for a CI gate.
type ChangeKind string

const (
	// Regression: the new verdict is fail or unknown and worse than the old
	// one (pass -> fail, pass -> unknown, unknown -> fail, absent -> fail).
	Regression ChangeKind = "regression"
	// CoverageLost: a passing rule is no longer checked (skipped,
	// not-applicable, or absent from the new bundle).
	CoverageLost ChangeKind = "coverage-lost"
	// Changed: any other change (fail -> unknown, skipped -> not-applicable).
	Changed ChangeKind = "changed"
	// Improvement: the new verdict is pass and the old one was not.
	Improvement ChangeKind = "improvement"
)

var kindOrder = map[ChangeKind]int{Regression: 0, CoverageLost: 1, Changed: 2, Improvement: 3}

// Absent stands for a rule a bundle has no result for.
const Absent verdict.Verdict = ""

// Change is one rule on one target whose verdict differs between bundles.
type Change struct {
	Kind   ChangeKind      `json:"kind"`
	Target string          `json:"target"`
	Rule   string          `json:"rule"`
	Level  string          `json:"level"`
	Title  string          `json:"title"`
	Old    verdict.Verdict `json:"old"` // "" when absent
	New    verdict.Verdict `json:"new"`
	Reason string          `json:"reason,omitempty"` // the new verdict's reason
}

// TargetChange is a target whose status differs (ran -> unavailable).
type TargetChange struct {
	Target string `json:"target"`
	Old    string `json:"old"` // "" when absent
	New    string `json:"new"`
}

// Bundle names one side of a diff.
type Bundle struct {
	Path       string `json:"path"`
	Command    string `json:"command"`
	Started    string `json:"started"`
	Conclusion string `json:"conclusion"`
	ExitCode   int    `json:"exitCode"`
}

// Diff is what changed between two bundles.
type Diff struct {
	Old       Bundle         `json:"old"`
	New       Bundle         `json:"new"`
	Targets   []TargetChange `json:"targets,omitempty"`
	Changes   []Change       `json:"changes"` // regressions first
	Unchanged int            `json:"unchanged"`
}

// ReadBundle reads a report folder or a results.json file.
func ReadBundle(path string) (*Report, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, FileJSON)
	}
	return Read(path)
}

// rank orders verdicts from worst to best for the regression test.
func rank(v verdict.Verdict) int {
	switch v {
	case verdict.Fail:
		return 0
	case verdict.Unknown:
		return 1
	case verdict.Pass:
		return 3
	}
	return 2 // skipped, not-applicable, absent: nothing decided either way
}

func classify(old, new verdict.Verdict) ChangeKind {
	switch {
	case (new == verdict.Fail || new == verdict.Unknown) && rank(new) < rank(old):
		return Regression
	case old == verdict.Pass && rank(new) == 2:
		return CoverageLost
	case new == verdict.Pass:
		return Improvement
	}
	return Changed
}

// Compare lists the verdict changes between old and new, matched by
// target and rule id.
func Compare(old, new *Report, oldPath, newPath string) Diff {
	d := Diff{Old: bundle(old, oldPath), New: bundle(new, newPath), Changes: []Change{}}
	type key struct{ target, rule string }
	before := map[key]verdict.Result{}
	for _, r := range old.Results {
		before[key{r.Target, r.Rule}] = r
	}
	seen := map[key]bool{}
	add := func(o, n verdict.Result, ov, nv verdict.Verdict) {
		if ov == nv {
			d.Unchanged++
			return
		}
		c := Change{Kind: classify(ov, nv), Target: n.Target, Rule: n.Rule, Level: n.Level, Title: n.Title, Old: ov, New: nv, Reason: n.Reason}
		if nv == Absent {
			c.Target, c.Rule, c.Level, c.Title = o.Target, o.Rule, o.Level, o.Title
		}
		d.Changes = append(d.Changes, c)
	}
	for _, n := range new.Results {
		k := key{n.Target, n.Rule}
		seen[k] = true
		o, ok := before[k]
		ov := Absent
		if ok {
			ov = o.Verdict
		}
		add(o, n, ov, n.Verdict)
	}
	for _, o := range old.Results {
		if !seen[key{o.Target, o.Rule}] {
			add(o, verdict.Result{}, o.Verdict, Absent)
		}
	}
	sort.SliceStable(d.Changes, func(i, j int) bool {
		a, b := d.Changes[i], d.Changes[j]
		if a.Kind != b.Kind {
			return kindOrder[a.Kind] < kindOrder[b.Kind]
		}
		if (a.Level == string(catalog.Must)) != (b.Level == string(catalog.Must)) {
			return a.Level == string(catalog.Must)
		}
		if a.Rule != b.Rule {
			return catalog.Less(a.Rule, b.Rule)
		}
		return a.Target < b.Target
	})

	status := map[string]string{}
	for _, t := range old.Targets {
		status[t.Name] = t.Status
	}
	for _, t := range new.Targets {
		if status[t.Name] != t.Status {
			d.Targets = append(d.Targets, TargetChange{Target: t.Name, Old: status[t.Name], New: t.Status})
		}
		delete(status, t.Name)
	}
	var gone []string
	for name := range status {
		gone = append(gone, name)
	}
	sort.Strings(gone)
	for _, name := range gone {
		d.Targets = append(d.Targets, TargetChange{Target: name, Old: status[name]})
	}
	return d
}

func bundle(r *Report, path string) Bundle {
	return Bundle{Path: path, Command: r.Run.Command, Started: r.Run.Started.Format("2006-01-02 15:04:05 MST"),
		Conclusion: r.Summary.Conclusion, ExitCode: r.Summary.ExitCode}
}

// MustRegressed lists the regressions of MUST rules: the CI gate.
func (d Diff) MustRegressed() []Change {
	var out []Change
	for _, c := range d.Changes {
		if c.Kind == Regression && c.Level == string(catalog.Must) {
			out = append(out, c)
		}
	}
	return out
}

// ExitCode is 1 when a MUST rule regressed, else 0.
func (d Diff) ExitCode() int {
	if len(d.MustRegressed()) > 0 {
		return ExitMustFailed
	}
	return ExitConformant
}

func shown(v verdict.Verdict) string {
	if v == Absent {
		return "absent"
	}
	return string(v)
}

// WriteText prints the diff, regressions first. Every field comes from a
// results.json, which anyone can write: shown on one line, no control
// character raw.
func (d Diff) WriteText(w io.Writer) {
	t := safetext.Text
	for _, b := range []struct {
		label string
		b     Bundle
	}{{"old", d.Old}, {"new", d.New}} {
		fmt.Fprintf(w, "%s: %s (started %s; %s, exit %d)\n", b.label, t(b.b.Path), t(fmt.Sprint(b.b.Started)), t(b.b.Conclusion), b.b.ExitCode)
	}
	for _, tg := range d.Targets {
		o, n := tg.Old, tg.New
		if o == "" {
			o = "absent"
		}
		if n == "" {
			n = "absent"
		}
		fmt.Fprintf(w, "target %s: %s -> %s\n", t(tg.Target), t(o), t(n))
	}
	if len(d.Changes) == 0 {
		fmt.Fprintf(w, "\nno verdict changed (%d compared)\n", d.Unchanged)
		return
	}
	count := map[ChangeKind]int{}
	for _, c := range d.Changes {
		count[c.Kind]++
	}
	fmt.Fprintf(w, "\n%d changed, %d unchanged: regressions %d (MUST %d), coverage lost %d, other %d, improvements %d\n",
		len(d.Changes), d.Unchanged, count[Regression], len(d.MustRegressed()), count[CoverageLost], count[Changed], count[Improvement])
	heading := map[ChangeKind]string{Regression: "regressions", CoverageLost: "coverage lost", Changed: "other changes", Improvement: "improvements"}
	var last ChangeKind
	for _, c := range d.Changes {
		if c.Kind != last {
			fmt.Fprintf(w, "\n%s\n", heading[c.Kind])
			last = c.Kind
		}
		fmt.Fprintf(w, "  %-6s %-8s %-28s %-26s %s\n", t(c.Level), t(c.Rule), t(c.Target), t(shown(c.Old)+" -> "+shown(c.New)), t(c.Title))
		if c.Kind == Regression && c.Reason != "" {
			fmt.Fprintf(w, "         reason: %s\n", t(strings.Join(strings.Fields(c.Reason), " ")))
		}
	}
	if m := d.MustRegressed(); len(m) > 0 {
		var names []string
		for _, c := range m {
			names = append(names, t(c.Rule+" on "+c.Target))
		}
		fmt.Fprintf(w, "\na MUST rule regressed: %s\n", strings.Join(names, ", "))
	}
}
