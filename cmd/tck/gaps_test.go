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
	"github.com/onceproof/tck/internal/runner/runnertest"
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
	t.Parallel() // see parallelTests in bin_test.go
	url := ownRedis(t)
	out, stdout, rep := conformantRun(t, "broker/redis="+url)
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

	_, stdout, _ = conformantRun(t, "broker/nats")
	if strings.Contains(stdout, "not protected") || strings.Contains(stdout, "not measured") {
		t.Errorf("NATS:\n%s", stdout)
	}
}

// conformantRun runs the broker suite on a correct target, which must be
// conformant: a run that is inconclusive only because of unknowns whose
// reasons name the kit's own lateness (a loaded host; the stall package's
// wording) is run again, at most runnertest.Runs times in all, and the
// last such run is accepted, saying so; a fail, another unknown or another
// exit code fails the test.
func conformantRun(t *testing.T, target string) (out, stdout string, rep *reports.Report) {
	t.Helper()
	for run := 1; ; run++ {
		out = t.TempDir()
		code, stdout, stderr := tck(t, "run", "--quiet", "--suite", "broker", "--target", target, "--out", out)
		if code != reports.ExitConformant && code != reports.ExitInconclusive {
			t.Fatalf("%s: exit %d: %s%s", target, code, stdout, stderr)
		}
		rep, err := reports.Read(filepath.Join(out, reports.FileJSON))
		if err != nil {
			t.Fatal(err)
		}
		if code == reports.ExitConformant {
			return out, stdout, rep
		}
		var late []string
		for _, r := range rep.Results {
			switch {
			case r.Verdict == verdict.Fail:
				t.Fatalf("%s: %s failed on a correct target: %s", target, r.Rule, r.Reason)
			case runnertest.Late(r):
				late = append(late, r.Rule+": "+r.Reason)
			case r.Verdict == verdict.Unknown:
				t.Fatalf("%s: %s unknown, its reason not the kit's lateness: %s", target, r.Rule, r.Reason)
			}
		}
		if run == runnertest.Runs {
			t.Logf("%s: still inconclusive after %d runs, every unknown naming the kit's own lateness (a loaded host), accepted as undecided:\n  %s", target, run, strings.Join(late, "\n  "))
			return out, stdout, rep
		}
		t.Logf("%s: run %d of at most %d inconclusive, every unknown naming the kit's own lateness, run again:\n  %s", target, run, runnertest.Runs, strings.Join(late, "\n  "))
	}
}
