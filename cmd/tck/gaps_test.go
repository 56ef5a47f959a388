package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/verdict"
)

// TestPrintGaps: the closing summary has one line per target and missing
// mechanism (BR-1.1 and BR-1.6 share one), none for a capability that
// leaves nothing to anyone (fault-proxy, pending-list).
func TestPrintGaps(t *testing.T) {
	na := func(id string, missing ...catalog.Capability) verdict.Result {
		var ms []string
		for _, c := range missing {
			ms = append(ms, string(c))
		}
		return verdict.Result{Rule: id, Suite: "broker", Target: "broker/redis", Level: "MUST", Verdict: verdict.NotApplicable, Missing: ms}
	}
	rep := &reports.Report{Results: []verdict.Result{
		na("BR-1.1", catalog.CapBrokerDedupe),
		na("BR-1.6", catalog.CapBrokerDedupe, catalog.CapBrokerFaultProxy),
		na("BR-2.6", catalog.CapBrokerMaxDeliver),
		na("BR-4.1", catalog.CapBrokerPendingList),
	}}
	rep.Finish()
	var out bytes.Buffer
	printGaps(&out, rep)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 ||
		!strings.HasPrefix(lines[0], "  not protected on broker/redis: no producer de-dupe (BR-1.1, BR-1.6 not applicable): ") ||
		!strings.Contains(lines[0], "every consumer de-dupes") ||
		!strings.HasPrefix(lines[1], "  not protected on broker/redis: no max-deliver or dead letter (BR-2.6 not applicable): ") {
		t.Errorf("closing lines:\n%s", out.String())
	}

	rep = &reports.Report{Results: []verdict.Result{na("BR-4.1", catalog.CapBrokerPendingList), {Rule: "BR-1.1", Target: "broker/nats", Level: "MUST", Verdict: verdict.Pass}}}
	rep.Finish()
	out.Reset()
	printGaps(&out, rep)
	if out.Len() != 0 {
		t.Errorf("lines for a target where every mechanism applies:\n%s", out.String())
	}
}

// TestRunGapsRedisAndNATS: a real run of the broker suite on a Redis 7 of
// the test's own closes with one line per missing mechanism (never a
// max-deliver or a nak on Redis, and the restart of a server the kit did
// not start not measured), the same lines head report.md and are
// results.json's gaps; the embedded NATS, where every mechanism applies,
// closes with none.
func TestRunGapsRedisAndNATS(t *testing.T) {
	url := ownRedis(t)
	out := t.TempDir()
	code, stdout, stderr := tck(t, "run", "--quiet", "--suite", "broker", "--target", "broker/redis="+url, "--out", out)
	if code != reports.ExitConformant {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	rep, err := reports.Read(filepath.Join(out, reports.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, reports.FileMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(md), "\n## ")
	caps := map[catalog.Capability]bool{}
	for _, g := range rep.Gaps {
		caps[g.Capability] = true
		if !strings.Contains(stdout, "  "+g.Line()+"\n") {
			t.Errorf("the closing summary lacks %s:\n%s", g.Capability, stdout)
		}
		if !strings.Contains(first, g.Label()+" on "+g.Target+": **"+g.Missing+"**") {
			t.Errorf("report.md's first screen lacks %s:\n%s", g.Capability, first)
		}
	}
	for _, c := range []catalog.Capability{catalog.CapBrokerMaxDeliver, catalog.CapBrokerNakDelay, catalog.CapBrokerTerm, catalog.CapBrokerRestart} {
		if !caps[c] {
			t.Errorf("no gap for %s on Redis: %+v", c, rep.Gaps)
		}
	}
	// Every not-applicable rule whose missing capability the table knows
	// is named in that capability's line.
	for _, r := range rep.Results {
		for _, c := range r.Missing {
			if _, ok := catalog.GapOf(catalog.Capability(c)); !ok {
				continue
			}
			found := false
			for _, g := range rep.Gaps {
				found = found || string(g.Capability) == c && slices.Contains(g.Rules, r.Rule)
			}
			if !found {
				t.Errorf("%s (missing %s) is in no gap", r.Rule, c)
			}
		}
	}

	code, stdout, stderr = tck(t, "run", "--quiet", "--suite", "broker", "--target", "broker/nats", "--out", t.TempDir())
	if code != reports.ExitConformant || strings.Contains(stdout, "not protected") || strings.Contains(stdout, "not measured") {
		t.Errorf("NATS: exit %d:\n%s%s", code, stdout, stderr)
	}
}
