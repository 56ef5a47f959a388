package reports

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/onceproof/tck/internal/verdict"
)

// Markdown writes report.md: what was checked, against what, what was
// measured against what was declared, every verdict, and the hazards.
func Markdown(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# onceproof conformance report\n\n")
	fmt.Fprintf(&b, "**%s** (exit code %d)\n\n", r.Summary.Conclusion, r.Summary.ExitCode)
	fmt.Fprintf(&b, "- Kit: %s %s (%s)\n", r.Kit.Name, r.Kit.Version, r.Kit.GoVersion)
	fmt.Fprintf(&b, "- Command: `%s`\n", r.Run.Command)
	fmt.Fprintf(&b, "- Started: %s, took %.1f s\n", r.Run.Started.Format("2006-01-02 15:04:05 MST"), float64(r.Run.DurationMs)/1000)
	fmt.Fprintf(&b, "- Verdicts: %s\n", counts(r.Summary.Counts))
	for _, x := range r.Summary.MustFailed {
		fmt.Fprintf(&b, "- MUST failed: %s\n", x)
	}
	for _, x := range r.Summary.MustUnknown {
		fmt.Fprintf(&b, "- MUST undecided: %s\n", x)
	}

	b.WriteString("\n## Targets\n\n| target | mode | version | declared | status |\n| --- | --- | --- | --- | --- |\n")
	for _, t := range r.Targets {
		status := t.Status
		if t.Error != "" {
			status += ": " + t.Error
		}
		if t.Emulator {
			status += " (emulator)"
		}
		if t.Mutant {
			status += " (deliberately broken)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", cell(t.Name), cell(where(t)), cell(t.Version), cell(config(t.Config)), cell(status))
	}

	if len(r.Hazards) > 0 {
		b.WriteString("\n## Hazards found\n\n")
		for _, h := range r.Hazards {
			fmt.Fprintf(&b, "- **%s %s**: %s\n", h.Target, h.Rule, h.Text)
		}
	}

	b.WriteString("\n## Verdicts\n\n| target | rule | level | verdict | reason |\n| --- | --- | --- | --- | --- |\n")
	for _, res := range r.Results {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", cell(res.Target), res.Rule, res.Level, mark(res.Verdict), cell(res.Reason))
	}

	b.WriteString("\n## Evidence\n")
	for _, res := range r.Results {
		ev := res.Evidence
		if ev == nil || (len(ev.Figures) == 0 && len(ev.Notes) == 0 && len(ev.Minimal) == 0 && len(ev.Timeline) == 0) {
			continue
		}
		fmt.Fprintf(&b, "\n### %s on %s: %s\n\n%s. %s\n", res.Rule, res.Target, res.Verdict, res.Title, res.Reason)
		if len(ev.Figures) > 0 {
			b.WriteString("\n| figure | value |\n| --- | --- |\n")
			for _, f := range ev.Figures {
				fmt.Fprintf(&b, "| %s | %v %s |\n", cell(f.Name), cell(fmt.Sprint(f.Value)), f.Unit)
			}
		}
		for _, n := range ev.Notes {
			if strings.Contains(n, "\n") {
				fmt.Fprintf(&b, "\n```\n%s\n```\n", n)
			} else {
				fmt.Fprintf(&b, "\n- %s\n", n)
			}
		}
		ops := ev.Minimal
		label := "Smallest failing history"
		if len(ops) == 0 {
			ops, label = ev.Timeline, "Timeline"
		}
		if len(ops) > 0 {
			fmt.Fprintf(&b, "\n%s (%d operations%s; raw: `%s/%s`):\n\n```\n", label, len(ops), truncNote(len(ops)), DirHistories, HistoryFile(res.Target, res.Rule))
			for i, op := range ops {
				if i == maxOpsShown {
					break
				}
				b.WriteString(op.String() + "\n")
			}
			b.WriteString("```\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

const maxOpsShown = 40

func truncNote(n int) string {
	if n > maxOpsShown {
		return fmt.Sprintf(", first %d shown", maxOpsShown)
	}
	return ""
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

func config(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
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
	return string(t.Mode) + " " + t.Address
}
