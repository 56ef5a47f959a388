package reports

import (
	"fmt"
	"io"
	"strings"

	"github.com/onceproof/tck/internal/verdict"
)

// Markdown writes report.md, the design-review document in text: the same
// sections as report.html (summary, matrix, environment, hazards with whose
// they are, the profile's analysis, every rule with its contract sentence
// and evidence, the glossary); timelines are operation lists here.
func Markdown(w io.Writer, r *Report) error {
	v := buildView(r)
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# onceproof conformance report\n\n")
	p("**%s** (exit code %d)", r.Summary.Conclusion, r.Summary.ExitCode)
	if len(r.Results) > 0 {
		p(": %s", counts(r.Summary.Counts))
	}
	p("\n\n")
	for _, x := range r.Summary.MustFailed {
		p("- MUST failed: %s\n", x)
	}
	for _, x := range r.Summary.MustUnknown {
		p("- MUST undecided: %s\n", x)
	}
	p("- Command: `%s`\n", r.Run.Command)
	if len(r.Results) > 0 {
		p("- Started: %s, took %s\n", r.Run.Started.Format("2006-01-02 15:04:05 MST"), runDuration(float64(r.Run.DurationMs)))
	}
	p("- Kit: %s %s (%s)\n", r.Kit.Name, r.Kit.Version, r.Kit.GoVersion)
	p("\nTerms are explained in the [glossary](#glossary) at the end.\n")

	if len(v.Summary) > 0 {
		p("\n## Summary by suite and target\n\n| suite | target | status | pass | fail | unknown | not-applicable | skipped | MUST failed | MUST undecided |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, s := range v.Summary {
			p("| %s | %s | %s | %d | %d | %d | %d | %d | %d | %d |\n", s.Suite, cell(s.Target), s.Status, s.Counts[verdict.Pass], s.Counts[verdict.Fail],
				s.Counts[verdict.Unknown], s.Counts[verdict.NotApplicable], s.Counts[verdict.Skipped], s.MustFailed, s.MustUnk)
		}
	}

	if len(v.Matrices) > 0 {
		p("\n## Rules by targets\n")
		for _, m := range v.Matrices {
			p("\n### %s suite\n\n| rule | level |", m.Suite)
			for _, t := range m.Targets {
				p(" %s |", cell(t))
			}
			p("\n|---|---|%s\n", strings.Repeat("---|", len(m.Targets)))
			for _, row := range m.Rows {
				p("| %s | %s |", row.Rule, row.Level)
				for _, c := range row.Cells {
					s := shortVerdict(c.Verdict)
					if c.Verdict == verdict.Fail {
						s = "**FAIL**"
					}
					if c.Note > 0 {
						s += fmt.Sprintf(" [%d]", c.Note)
					}
					p(" %s |", s)
				}
				p("\n")
			}
			if len(m.Footnotes) > 0 {
				p("\n")
				for i, f := range m.Footnotes {
					p("%d. not applicable on %s\n", i+1, cell(f))
				}
			}
		}
	}

	if len(v.Env) > 0 {
		p("\n## Environment\n\nKit %s %s, built with %s.\n", r.Kit.Name, r.Kit.Version, r.Kit.GoVersion)
		for _, e := range v.Env {
			server := strings.Join(e.Server, "; ")
			for _, c := range e.Compared {
				if server != "" {
					server += "; "
				}
				server += fmt.Sprintf("%d settings compared in %s", c.N, c.Rule)
			}
			if server == "" {
				server = "nothing read beyond the version"
			}
			settings := "**" + e.SettingsFrom + "**"
			if e.Settings != "" {
				settings += ": " + e.Settings
			}
			status := e.Status
			for _, n := range e.Notes {
				status += "; " + n
			}
			p("\n### %s\n\n| | |\n|---|---|\n| reached | %s |\n| server version | %s |\n| read from the server | %s |\n| time scale | %s |\n| settings under test | %s |\n| status | %s |\n",
				e.Target, cell(e.Mode), cell(e.Version), cell(server), cell(e.Scale), cell(settings), cell(status))
		}
	}

	if len(v.TargetHazards)+len(v.KitHazards) > 0 {
		p("\n## Hazards found by the run\n\nEach hazard says whose it is; a hazard on a passing rule is a risk the rule demonstrated or found in the settings, not a failure.\n")
		if len(v.TargetHazards) > 0 {
			p("\n### On the target\n\n")
			for _, h := range v.TargetHazards {
				p("- **%s on %s** (%s): %s\n", h.Rule, h.Target, h.Whose, h.Text)
			}
		}
		if len(v.KitHazards) > 0 {
			p("\n### Of the kit's test set-up\n\n")
			for _, h := range v.KitHazards {
				p("- **%s on %s** (%s): %s\n", h.Rule, h.Target, h.Whose, h.Text)
			}
		}
	}

	if pl := v.Plan; pl != nil {
		p("\n## Pipeline profile %s: static analysis\n\nFrom `%s`; nothing was started for this part. These hazards are the pipeline profile's (the team's declared design).\n\n### Declared pipeline\n\n", pl.Profile, pl.File)
		for _, l := range pl.Pipeline {
			p("- `%s`\n", l)
		}
		p("\n### %d hazard%s\n", len(pl.Hazards), map[bool]string{true: "", false: "s"}[len(pl.Hazards) == 1])
		for _, h := range pl.Hazards {
			p("\n#### H%d %s `%s`: %s\n\n%s\n\n`%s:%d` field `%s`\n", h.N, h.Rule, h.Check, h.Subject, h.Summary, pl.File, h.Line, h.Field)
			if h.Contract != "" {
				p("\n> %s\n\nsource: %s\n", h.Contract, h.Source)
			}
			p("\nArithmetic:\n\n")
			for _, a := range h.Arithmetic {
				p("- %s\n", a)
			}
			if len(h.Timeline) > 0 {
				p("\nTimeline:\n\n| # | when | what | drawn as |\n|---|---|---|---|\n")
				for i, m := range h.Timeline {
					p("| %d | %s | %s | %s |\n", i+1, markWhen(m), cell(m.Text), shapeName(markShape(m.Text)))
				}
			}
		}
		p("\n### What each acknowledgement proves, and what it does not\n\n(seed 002 §六, §八, for the declared pipeline)\n\n| layer | acknowledgement | proves | does not prove |\n|---|---|---|---|\n")
		for _, a := range pl.Acks {
			p("| %s | %s | %s | %s |\n", cell(a.Layer), cell(a.Ack), cell(a.Proves), cell(strings.Join(a.DoesNotProve, "; ")))
		}
	}

	if len(v.Rules) > 0 {
		p("\n## Verdicts\n\n| target | rule | level | kind | verdict | reason |\n|---|---|---|---|---|---|\n")
		for _, rv := range v.Rules {
			p("| %s | %s | %s | %s | %s | %s |\n", cell(rv.Target), rv.Rule, rv.Level, rv.Kind, mark(rv.Verdict), cell(rv.Reason))
		}
		p("\n## Rules: contract, evidence, timeline\n")
		for _, rv := range v.Rules {
			p("\n### %s on %s: %s\n\n**%s** (%s, %s, %s)\n", rv.Rule, rv.Target, rv.Verdict, rv.Title, rv.Level, rv.Kind, rv.Duration)
			if rv.Contract != "" {
				p("\n> %s\n\nsource: %s\n", rv.Contract, rv.Source)
			}
			p("\n%s\n", rv.Reason)
			for _, h := range rv.Hazards {
				p("\n- hazard (%s): %s\n", h.Whose, h.Text)
			}
			if len(rv.Comparisons) > 0 {
				p("\n| setting | %s | actual | source | match |\n|---|---|---|---|---|\n", rv.DeclaredLabel)
				for _, c := range rv.Comparisons {
					src := c.Source
					if src == "server" {
						src = "read from the server"
					}
					p("| %s | %s | %s | %s | %s |\n", cell(c.Setting), cell(c.Declared), cell(c.Actual), src, map[bool]string{true: "yes", false: "**NO**"}[c.Match])
				}
			}
			if len(rv.Figures) > 0 {
				p("\n| figure | value |\n|---|---|\n")
				for _, f := range rv.Figures {
					p("| %s | %s |\n", cell(f.Name), cell(f.Value))
				}
			}
			for _, n := range rv.Notes {
				if strings.Contains(n, "\n") {
					p("\n```\n%s\n```\n", n)
				} else {
					p("\n- %s\n", n)
				}
			}
			if len(rv.Ops) > 0 {
				more := ""
				if rv.OpsTotal > len(rv.Ops) {
					more = fmt.Sprintf(", first %d shown", len(rv.Ops))
				}
				p("\n%s (%d operations%s; raw: `%s`):\n\n```\n", upperFirst(rv.OpsLabel), rv.OpsTotal, more, rv.History)
				for _, op := range rv.Ops {
					b.WriteString(opLine(op) + "\n")
				}
				b.WriteString("```\n")
			}
		}
	}

	p("\n## Glossary\n\n")
	for _, t := range Glossary {
		p("- **%s**: %s\n", t.Term, t.Text)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// maxOpsShown bounds the operations listed per rule; the raw history in
// histories/ has them all.
const maxOpsShown = 40

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func counts(c map[verdict.Verdict]int) string {
	order := []verdict.Verdict{verdict.Pass, verdict.Fail, verdict.Unknown, verdict.NotApplicable, verdict.Skipped}
	var parts []string
	for _, v := range order {
		if c[v] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[v], v))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func mark(v verdict.Verdict) string {
	switch v {
	case verdict.Fail:
		return "**FAIL**"
	case verdict.Unknown:
		return "*unknown*"
	}
	return string(v)
}

func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// where is the mode, with the address when it says more than the mode.
func where(t Target) string {
	if t.Address == "" || t.Address == string(t.Mode) {
		return string(t.Mode)
	}
	if strings.HasPrefix(t.Address, string(t.Mode)+" ") {
		return t.Address
	}
	return string(t.Mode) + " " + t.Address
}
