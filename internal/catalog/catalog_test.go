package catalog_test

import (
	"os"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/catalog"
)

// TestRulesDocMatchesCatalog keeps docs/RULES.md, the reviewed list of rules,
// equal to the catalog. Regenerate it with `make rules`.
func TestRulesDocMatchesCatalog(t *testing.T) {
	want := catalog.Markdown()
	got, err := os.ReadFile("../../docs/RULES.md")
	if err != nil {
		t.Fatalf("docs/RULES.md: %v (run make rules)", err)
	}
	if string(got) != want {
		t.Fatalf("docs/RULES.md differs from the catalog; run `make rules` and review the diff")
	}
}

// TestIssueRuleIDs pins the rule ids earlier issues fixed: renaming or
// dropping one breaks every report that cites it.
func TestIssueRuleIDs(t *testing.T) {
	fixed := map[string]string{
		"eventstore": "ES-1.1 ES-1.2 ES-1.3 ES-1.4 ES-1.5 ES-1.6 ES-1.7 ES-1.8 ES-1.9 ES-1.10 ES-1.11 ES-1.12 ES-1.13 ES-2.1 ES-2.2 ES-2.3 ES-2.4 ES-2.5 ES-2.6 ES-3.1",
		"broker":     "BR-1.1 BR-1.2 BR-1.3 BR-1.4 BR-1.5 BR-1.6 BR-1.7 BR-2.1 BR-2.2 BR-2.3 BR-2.4 BR-2.5 BR-2.6 BR-2.7 BR-2.8 BR-2.9 BR-3.1",
		"consumer":   "CO-1.1 CO-1.2 CO-1.3 CO-1.4 CO-1.5 CO-2.1 CO-2.2 CO-2.3 CO-3.1 CO-4.1 CO-5.1",
	}
	for suite, ids := range fixed {
		have := map[string]bool{}
		for _, r := range catalog.All(suite) {
			have[r.ID] = true
		}
		// New rules get new ids; the fixed ones stay.
		for _, id := range strings.Fields(ids) {
			if !have[id] {
				t.Errorf("suite %s lost rule %s", suite, id)
			}
		}
	}
}

func TestAddRejectsBadMetadata(t *testing.T) {
	bad := []catalog.Rule{
		{ID: "ES-1", Suite: "eventstore", Level: catalog.Must, Kind: catalog.Requirement, Title: "t", Contract: "c", Source: "s"},
		{ID: "ES-9.9", Suite: "broker", Level: catalog.Must, Kind: catalog.Requirement, Title: "t", Contract: "c", Source: "s"},
		{ID: "ES-9.9", Suite: "eventstore", Level: "MUSTN'T", Kind: catalog.Requirement, Title: "t", Contract: "c", Source: "s"},
		{ID: "ES-9.9", Suite: "eventstore", Level: catalog.Must, Kind: catalog.Requirement, Title: "", Contract: "c", Source: "s"},
		{ID: "ES-1.1", Suite: "eventstore", Level: catalog.Must, Kind: catalog.Requirement, Title: "t", Contract: "c", Source: "s"}, // duplicate
	}
	for _, r := range bad {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("catalog.Add accepted %+v", r)
				}
			}()
			catalog.Add(r)
		}()
	}
}

// TestGapsTable: every entry of the gap table is a capability some rule
// needs (an entry no rule can make missing would never be shown), is
// filled in, and rests on seed 002 or a broker's documentation.
func TestGapsTable(t *testing.T) {
	needed := map[catalog.Capability]bool{}
	for _, r := range catalog.All("") {
		for _, c := range r.Needs {
			needed[c] = true
		}
	}
	seen := map[catalog.Capability]bool{}
	for _, g := range catalog.Gaps() {
		if !needed[g.Capability] {
			t.Errorf("gap %s: no rule needs this capability", g.Capability)
		}
		if seen[g.Capability] {
			t.Errorf("gap %s: twice", g.Capability)
		}
		seen[g.Capability] = true
		if g.Kind != catalog.GapUnprotected && g.Kind != catalog.GapUnmeasured {
			t.Errorf("gap %s: kind %q", g.Capability, g.Kind)
		}
		if g.Missing == "" || g.Leaves == "" || g.Who == "" || g.Compensate == "" || !strings.Contains(g.Source, "seeds/002") {
			t.Errorf("gap %s: incomplete or without the seed: %+v", g.Capability, g)
		}
	}
}
