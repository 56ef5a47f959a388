package reports

import (
	"os"
	"strings"
	"testing"
)

// TestGlossaryDocumented keeps docs/report.md's glossary equal to the one
// the report prints.
func TestGlossaryDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/report.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range Glossary {
		if line := "- **" + g.Term + "**: " + g.Text; !strings.Contains(string(doc), line) {
			t.Errorf("docs/report.md lacks the glossary line:\n%s", line)
		}
	}
}
