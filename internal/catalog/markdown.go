package catalog

import (
	"fmt"
	"strings"
)

// Markdown renders the catalog as docs/RULES.md. It is the only writer of that
// file (`tck list --format markdown > docs/RULES.md`, or `make rules`).
func Markdown() string {
	var b strings.Builder
	b.WriteString("# Rules\n\n")
	b.WriteString("Generated from the rule catalog (`package catalog`) by `make rules`; do not edit by hand.\n")
	b.WriteString("A test fails when this file and the catalog disagree.\n\n")
	b.WriteString("Levels follow RFC 2119. A *characterization* rule measures a property and fails only where the\n")
	b.WriteString("measurement contradicts what the target declares.\n")
	for _, suite := range Suites() {
		rs := All(suite)
		if len(rs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n## %s\n\n", suite)
		b.WriteString("| id | level | kind | title | needs |\n| --- | --- | --- | --- | --- |\n")
		for _, r := range rs {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.ID, r.Level, r.Kind, escape(r.Title), escape(needs(r)))
		}
		for _, r := range rs {
			fmt.Fprintf(&b, "\n### %s %s\n\n", r.ID, r.Title)
			fmt.Fprintf(&b, "- Level: %s, %s\n", r.Level, r.Kind)
			fmt.Fprintf(&b, "- Contract: %s\n", r.Contract)
			fmt.Fprintf(&b, "- Source: %s\n", r.Source)
			if len(r.Needs) > 0 {
				fmt.Fprintf(&b, "- Needs: %s\n", needs(r))
			}
		}
	}
	return b.String()
}

func needs(r Rule) string {
	s := make([]string, len(r.Needs))
	for i, c := range r.Needs {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

func escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
