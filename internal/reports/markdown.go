package reports

import (
	"fmt"
	"io"
	"strings"

	"github.com/onceproof/tck/internal/safetext"
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
	p("**%s** (exit code %d)", md(r.Summary.Conclusion), r.Summary.ExitCode)
	if len(r.Results) > 0 {
		p(": %s", counts(r.Summary.Counts))
	}
	p("\n\n")
	for _, f := range v.Failures {
		what := "failed"
		if f.Verdict == verdict.Unknown {
			what = "undecided"
		}
		p("- MUST %s: **%s** on %s (%s): %s\n", what, md(f.Rule), md(f.Target), md(f.Title), md(f.OneLine()))
	}
	for _, g := range r.Gaps {
		p("- %s on %s: **%s** (%s not applicable): %s; left to the %s: %s (%s)\n", g.Label(), md(g.Target), md(g.Missing), md(strings.Join(g.Rules, ", ")), md(g.Leaves), md(g.Who), md(g.Compensate), md(g.Source))
	}
	p("- Command: %s\n", codeSpan(r.Run.Command))
	if len(r.Results) > 0 {
		p("- Started: %s, took %s\n", r.Run.Started.Format("2006-01-02 15:04:05 MST"), runDuration(float64(r.Run.DurationMs)))
	}
	p("- Kit: %s %s (%s)\n", md(r.Kit.Name), md(r.Kit.Version), md(r.Kit.GoVersion))
	p("\nTerms are explained in the [glossary](#glossary) at the end.\n")

	if len(v.Summary) > 0 {
		p("\n## Summary by suite and target\n\n| suite | target | status | pass | fail | unknown | not-applicable | skipped | MUST failed | MUST undecided |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, s := range v.Summary {
			p("| %s | %s | %s | %d | %d | %d | %d | %d | %d | %d |\n", md(s.Suite), cell(s.Target), md(s.Status), s.Counts[verdict.Pass], s.Counts[verdict.Fail],
				s.Counts[verdict.Unknown], s.Counts[verdict.NotApplicable], s.Counts[verdict.Skipped], s.MustFailed, s.MustUnk)
		}
	}

	if len(v.Matrices) > 0 {
		p("\n## Rules by targets\n")
		for _, m := range v.Matrices {
			p("\n### %s suite\n\n| rule | level |", md(m.Suite))
			for _, t := range m.Targets {
				p(" %s |", cell(t))
			}
			p("\n|---|---|%s\n", strings.Repeat("---|", len(m.Targets)))
			for _, row := range m.Rows {
				p("| %s | %s |", md(row.Rule), md(string(row.Level)))
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
		p("\n## Environment\n\nKit %s %s, built with %s.\n", md(r.Kit.Name), md(r.Kit.Version), md(r.Kit.GoVersion))
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
			settings := "**" + md(e.SettingsFrom) + "**"
			if e.Settings != "" {
				settings += ": " + md(e.Settings)
			}
			status := e.Status
			for _, n := range e.Notes {
				status += "; " + n
			}
			p("\n### %s\n\n| | |\n|---|---|\n| reached | %s |\n| server version | %s |\n| read from the server | %s |\n| time scale | %s |\n| settings under test | %s |\n| status | %s |\n",
				md(e.Target), cell(e.Mode), cell(e.Version), cell(server), cell(e.Scale), settings, cell(status))
		}
	}

	if len(v.TargetHazards)+len(v.KitHazards) > 0 {
		p("\n## Hazards found by the run\n\nEach hazard says whose it is; a hazard on a passing rule is a risk the rule demonstrated or found in the settings, not a failure.\n")
		if len(v.TargetHazards) > 0 {
			p("\n### On the target\n\n")
			for _, h := range v.TargetHazards {
				p("- **%s on %s** (%s): %s\n", md(h.Rule), md(h.Target), md(h.Whose), md(h.Text))
			}
		}
		if len(v.KitHazards) > 0 {
			p("\n### Of the kit's test set-up\n\n")
			for _, h := range v.KitHazards {
				p("- **%s on %s** (%s): %s\n", md(h.Rule), md(h.Target), md(h.Whose), md(h.Text))
			}
		}
	}

	if pl := v.Plan; pl != nil {
		p("\n## Pipeline profile %s: static analysis\n\nFrom %s; nothing was started for this part. These hazards are the pipeline profile's (the team's declared design).\n\n### Declared pipeline\n\n", md(pl.Profile), codeSpan(pl.File))
		for _, l := range pl.Pipeline {
			p("- %s\n", codeSpan(l))
		}
		p("\n### %d hazard%s\n", len(pl.Hazards), map[bool]string{true: "", false: "s"}[len(pl.Hazards) == 1])
		for _, h := range pl.Hazards {
			p("\n#### H%d %s %s: %s\n\n%s\n\n%s field %s\n", h.N, md(h.Rule), codeSpan(h.Check), md(h.Subject), md(h.Summary), codeSpan(fmt.Sprintf("%s:%d", pl.File, h.Line)), codeSpan(h.Field))
			if h.Contract != "" {
				p("\n> %s\n\nsource: %s\n", md(h.Contract), md(h.Source))
			}
			p("\nArithmetic:\n\n")
			for _, a := range h.Arithmetic {
				p("- %s\n", md(a))
			}
			if len(h.Timeline) > 0 {
				p("\nTimeline:\n\n| # | when | what | drawn as |\n|---|---|---|---|\n")
				for i, m := range h.Timeline {
					p("| %d | %s | %s | %s |\n", i+1, cell(markWhen(m)), cell(m.Text), shapeName(markShape(m.Text)))
				}
			}
		}
		p("\n### What each acknowledgement proves, and what it does not\n\n(seed 002 §六, §八, for the declared pipeline)\n\n| layer | acknowledgement | proves | does not prove |\n|---|---|---|---|\n")
		for _, a := range pl.Acks {
			p("| %s | %s | %s | %s |\n", cell(a.Layer), cell(a.Ack), cell(a.Proves), cell(strings.Join(a.DoesNotProve, "; ")))
		}
	}

	if len(v.All) > 0 {
		p("\n## Verdicts\n\n| target | rule | level | kind | verdict | reason |\n|---|---|---|---|---|---|\n")
		for _, rv := range v.All {
			p("| %s | %s | %s | %s | %s | %s |\n", cell(rv.Target), md(rv.Rule), md(rv.Level), md(rv.Kind), mark(rv.Verdict), cell(rv.Reason))
		}
	}
	if len(v.NotChecked) > 0 {
		p("\n## Not checked, and why\n\nRules a target did not check, grouped by the reason: they certify nothing either way.\n")
		for _, g := range v.NotChecked {
			p("\n### %d rule%s %s on %s\n\n%s\n\n", len(g.Rules), map[bool]string{true: "", false: "s"}[len(g.Rules) == 1], md(string(g.Verdict)), md(g.Target), md(g.Reason))
			for _, rv := range g.Rules {
				p("- **%s** %s (%s)\n", md(rv.Rule), md(rv.Title), md(rv.Level))
			}
		}
	}
	if len(v.Rules) > 0 || v.PassesOmitted > 0 {
		p("\n## Rules: contract, evidence, timeline\n")
		if v.PassesOmitted > 0 {
			p("\n%d passing results have no section and no verdicts row here: a report of more than %d results gives them only to the results that did not pass. Each pass is in the matrix; its evidence is in its shard's report.\n", v.PassesOmitted, sectionLimit)
		}
		for _, rv := range v.Rules {
			p("\n### %s on %s: %s\n\n**%s** (%s, %s, %s)\n", md(rv.Rule), md(rv.Target), md(string(rv.Verdict)), md(rv.Title), md(rv.Level), md(rv.Kind), md(rv.Duration))
			if rv.Contract != "" {
				p("\n> %s\n\nsource: %s\n", md(rv.Contract), md(rv.Source))
			}
			p("\n%s\n", md(rv.Reason))
			for _, h := range rv.Hazards {
				p("\n- hazard (%s): %s\n", md(h.Whose), md(h.Text))
			}
			if len(rv.Comparisons) > 0 {
				p("\n| setting | %s | actual | source | match |\n|---|---|---|---|---|\n", md(rv.DeclaredLabel))
				for _, c := range rv.Comparisons {
					src := c.Source
					if src == "server" {
						src = "read from the server"
					}
					p("| %s | %s | %s | %s | %s |\n", cell(c.Setting), cell(c.Declared), cell(c.Actual), cell(src), map[bool]string{true: "yes", false: "**NO**"}[c.Match])
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
					f := fence(n)
					p("\n%s\n%s\n%s\n", f, n, f)
				} else {
					p("\n- %s\n", md(n))
				}
			}
			if len(rv.Ops) > 0 {
				more := ""
				if rv.OpsTotal > len(rv.Ops) {
					more = fmt.Sprintf(", first %d shown", len(rv.Ops))
				}
				var ops strings.Builder
				for _, op := range rv.Ops {
					ops.WriteString(opLine(op) + "\n")
				}
				f := fence(ops.String())
				p("\n%s (%d operations%s; raw: %s):\n\n%s\n%s%s\n", md(upperFirst(rv.OpsLabel)), rv.OpsTotal, more, codeSpan(rv.History), f, ops.String(), f)
			}
		}
	}

	p("\n## Glossary\n\n")
	for _, t := range Glossary {
		p("- **%s**: %s\n", t.Term, t.Text)
	}
	// The document's own layout stays; any control character a target,
	// profile or results.json put into a field is shown escaped.
	_, err := io.WriteString(w, safetext.Lines(b.String()))
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

// cell is text in a table cell.
func cell(s string) string { return md(s) }

// mdEscaper escapes what Markdown or HTML would read as markup: the text
// shows as written, and no <script>, link or emphasis of a target's making
// becomes one.
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "|", `\|`,
	"<", "&lt;", ">", "&gt;", "&", "&amp;", "~", `\~`,
	"\r\n", " ", "\n", " ", "\r", " ",
)

// md is text from outside the kit in running Markdown: markup escaped,
// newlines folded (a newline in a profile's name adds no heading), and a
// leading block marker (#, -, +, =, 1.) escaped where it starts a line.
func md(s string) string {
	s = mdEscaper.Replace(s)
	if s != "" && strings.ContainsAny(s[:1], "#-+=") || leadingOrdinal(s) {
		s = `\` + s
	}
	return s
}

func leadingOrdinal(s string) bool {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i > 0 && i < len(s) && (s[i] == '.' || s[i] == ')')
}

// codeSpan is text shown as code in running Markdown: a fence of
// backticks longer than any run inside, newlines folded.
func codeSpan(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	f := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " " // CommonMark strips one space each side
	}
	return f + s + f
}

// fence is a code block fence no line of s can close.
func fence(s string) string {
	return strings.Repeat("`", max(3, longestRun(s, '`')+1))
}

func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
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
