package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/registry"

	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/verdict"
)

func TestNoArgumentsPrintsUsage(t *testing.T) {
	code, stdout, stderr := tck(t)
	if code != reports.ExitUsage || stdout != "" || !strings.Contains(stderr, "Usage: tck <command>") {
		t.Fatalf("bare tck: exit %d, stdout %q, stderr %q; want usage on stderr and exit 3", code, stdout, stderr)
	}
}

// writeResults writes a results.json holding the given verdicts.
func writeResults(t *testing.T, dir string, verdicts map[string]verdict.Verdict, rules []string) {
	t.Helper()
	rep := &reports.Report{Run: reports.Run{Started: time.Now(), Suites: []string{"eventstore"}, Rules: rules}}
	for id, v := range verdicts {
		rep.Results = append(rep.Results, verdict.Result{Rule: id, Suite: "eventstore", Target: "eventstore/memory", Level: "MUST", Verdict: v, Reason: "r", Evidence: &verdict.Evidence{}})
	}
	rep.Targets = []reports.Target{{Status: "ran"}}
	rep.Finish()
	if err := reports.WriteAll(dir, rep); err != nil {
		t.Fatal(err)
	}
}

// editVerdict rewrites one rule's verdict in results.json by hand, leaving
// the stored summary as it was.
func editVerdict(t *testing.T, dir, rule, to string) {
	t.Helper()
	path := filepath.Join(dir, reports.FileJSON)
	var raw map[string]any
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for _, r := range raw["results"].([]any) {
		m := r.(map[string]any)
		if m["rule"] == rule {
			m["verdict"] = to
		}
	}
	data, _ = json.Marshal(raw)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReportRecomputesTheSummary(t *testing.T) {
	dir := t.TempDir()
	writeResults(t, dir, map[string]verdict.Verdict{"ES-1.1": verdict.Pass, "ES-1.2": verdict.Pass}, nil)
	editVerdict(t, dir, "ES-1.2", "fail")
	code, stdout, _ := tck(t, "report", "--in", dir)
	if code != reports.ExitMustFailed || !strings.HasPrefix(stdout, "not conformant") {
		t.Fatalf("edited to fail: exit %d, stdout %q; want exit 1, not conformant", code, stdout)
	}
	md, _ := os.ReadFile(filepath.Join(dir, reports.FileMarkdown))
	if strings.Contains(string(md), "conformant (exit code 0)") {
		t.Errorf("report.md still headlined conformant")
	}

	editVerdict(t, dir, "ES-1.2", "bogus")
	code, _, stderr := tck(t, "report", "--in", dir)
	if code != reports.ExitUsage || !strings.Contains(stderr, "ES-1.2") || !strings.Contains(stderr, "bogus") {
		t.Fatalf("bogus verdict: exit %d, stderr %q; want exit 3 naming the rule", code, stderr)
	}
}

func TestFilteredRunIsPartial(t *testing.T) {
	dir := t.TempDir()
	writeResults(t, dir, map[string]verdict.Verdict{"ES-1.1": verdict.Pass, "ES-1.2": verdict.Skipped}, []string{"ES-1.1"})
	rep, err := reports.Read(filepath.Join(dir, reports.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rep.Summary.Conclusion, "partial: 1 of 2 rules run") {
		t.Fatalf("conclusion %q, want partial", rep.Summary.Conclusion)
	}
}

func TestEmptyListsNotNull(t *testing.T) {
	rep := &reports.Report{}
	rep.Finish()
	data, _ := json.Marshal(rep)
	for _, k := range []string{`"results":null`, `"targets":null`, `"suites":null`} {
		if strings.Contains(string(data), k) {
			t.Errorf("results.json holds %s", k)
		}
	}
}

func TestOutDirUniqueLockedAndCleared(t *testing.T) {
	t.Chdir(t.TempDir())
	now := time.Now()
	a, unlockA, err := claimOutDir("", now)
	if err != nil {
		t.Fatal(err)
	}
	b, unlockB, err := claimOutDir("", now)
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatalf("two runs started at the same instant share %s", a)
	}
	unlockB()
	if _, _, err := claimOutDir(a, now); err == nil || !strings.Contains(err.Error(), "in use by another run") {
		t.Fatalf("second claim of a locked folder: %v", err)
	}
	// A previous run's files go; a file the kit did not write stays.
	os.MkdirAll(filepath.Join(a, reports.DirHistories), 0o755)
	os.WriteFile(filepath.Join(a, reports.DirHistories, "old.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(a, reports.FileJSON), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(a, "notes.txt"), []byte("mine"), 0o644)
	unlockA()
	_, unlock, err := claimOutDir(a, now)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(a, reports.DirHistories, "old.json")); err == nil {
		t.Errorf("stale history survived a reused --out")
	}
	if _, err := os.Stat(filepath.Join(a, reports.FileJSON)); err == nil {
		t.Errorf("stale results.json survived a reused --out")
	}
	if _, err := os.Stat(filepath.Join(a, "notes.txt")); err != nil {
		t.Errorf("a file the kit did not write was removed")
	}
	// A folder the kit did not mark is never cleared: refused, untouched.
	mine := filepath.Join(t.TempDir(), "mine")
	os.MkdirAll(filepath.Join(mine, reports.DirHistories), 0o755)
	for _, f := range []string{reports.FileMarkdown, reports.FileJSON, filepath.Join(reports.DirHistories, "precious.txt")} {
		os.WriteFile(filepath.Join(mine, f), []byte("mine"), 0o644)
	}
	if _, _, err := claimOutDir(mine, now); err == nil || !strings.Contains(err.Error(), "holds files the kit did not write") {
		t.Errorf("an unmarked folder of the user's: %v", err)
	}
	for _, f := range []string{reports.FileMarkdown, reports.FileJSON, filepath.Join(reports.DirHistories, "precious.txt"), lockFile, markerFile} {
		_, err := os.Stat(filepath.Join(mine, f))
		if mustExist := f != lockFile && f != markerFile; mustExist != (err == nil) {
			t.Errorf("%s: %v after the refusal", f, err)
		}
	}
	// A lock left by a process that is gone is taken over.
	unlock()
	os.WriteFile(filepath.Join(a, lockFile), []byte("999999999\n"), 0o644)
	if _, unlock2, err := claimOutDir(a, now); err != nil {
		t.Errorf("stale lock not taken over: %v", err)
	} else {
		unlock2()
	}
}

// TestDocsMatchTheCLI fails when the README or docs/ name an exit code or a
// command the CLI does not have, or miss one it has.
func TestDocsMatchTheCLI(t *testing.T) {
	read := func(p string) string {
		data, err := os.ReadFile(filepath.Join("..", "..", p))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	readme := read("README.md")
	codes := regexp.MustCompile(`(?m)^\| ([0-9]+) \| `).FindAllStringSubmatch(readme, -1)
	var got []string
	for _, c := range codes {
		got = append(got, c[1])
	}
	if want := []string{"0", "1", "2", "3", "4", "5"}; !slices.Equal(got, want) {
		t.Errorf("README exit-code table lists %v, the CLI has %v", got, want)
	}
	docCmds := map[string]bool{}
	for _, m := range regexp.MustCompile("tck ([a-z]+)").FindAllStringSubmatch(readme, -1) {
		docCmds[m[1]] = true
	}
	arch := read("docs/ARCHITECTURE.md")
	for name, c := range commands {
		if c.summary == "" {
			continue // hidden: internal to tck run (parallel.go)
		}
		if !docCmds[name] {
			t.Errorf("README does not show the command tck %s", name)
		}
		if !strings.Contains(arch, "`"+name+"`") {
			t.Errorf("docs/ARCHITECTURE.md does not list the command `%s`", name)
		}
	}
	for _, k := range registry.Targets().Kinds("", false) {
		if !strings.Contains(readme, "`"+k.Key()+"`") {
			t.Errorf("README's target table does not list %s", k.Key())
		}
	}
	for _, p := range []string{"README.md", "docs/containers.md", "docs/ARCHITECTURE.md", "docs/broker.md", "docs/eventstore.md", "docs/consumer.md"} {
		for _, m := range regexp.MustCompile(`exits? (?:with )?(?:code )?([0-9]+)`).FindAllStringSubmatch(read(p), -1) {
			if !slices.Contains([]string{"0", "1", "2", "3", "4", "5"}, m[1]) {
				t.Errorf("%s: %q: the CLI has no exit code %s", p, m[0], m[1])
			}
		}
	}
}

func TestPlanProfileExitCodes(t *testing.T) {
	root := filepath.Join("..", "..", "examples", "profiles")
	code, stdout, _ := tck(t, "plan", "--profile", filepath.Join(root, "seed-07-07.yaml"))
	if code != 1 || !strings.Contains(stdout, "retry at 6m0s") || strings.Contains(stdout, "retry at 4m0s >=") {
		t.Errorf("seed profile: exit %d; want 1 naming the 6-minute retry and not the 4-minute one:\n%s", code, stdout)
	}
	if !strings.Contains(stdout, "11m0s") || !strings.Contains(stdout, "10m0s") {
		t.Errorf("seed profile: the 10-minute record against the 11-minute redelivery is not named:\n%s", stdout)
	}
	if code, stdout, _ := tck(t, "plan", "--profile", filepath.Join(root, "hazard-free.yaml")); code != 0 {
		t.Errorf("hazard-free profile: exit %d:\n%s", code, stdout)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("version: 1\nbrokers:\n  - kind: nats\n    name: main\n    streams:\n      - name: S\n        duplicates: 300\n"), 0o644)
	code, _, stderr := tck(t, "plan", "--profile", bad)
	if code != reports.ExitUsage || !strings.Contains(stderr, "bad.yaml:") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("malformed profile: exit %d, stderr %q; want exit 3, one line naming the file and line", code, stderr)
	}
}

func TestReportDiffGatesOnMustRegression(t *testing.T) {
	old, cur := t.TempDir(), t.TempDir()
	writeResults(t, old, map[string]verdict.Verdict{"ES-1.1": verdict.Pass, "ES-1.2": verdict.Pass}, nil)
	writeResults(t, cur, map[string]verdict.Verdict{"ES-1.1": verdict.Pass, "ES-1.2": verdict.Fail}, nil)
	code, stdout, _ := tck(t, "report", "diff", old, cur)
	if code != 1 || !strings.Contains(stdout, "ES-1.2") {
		t.Errorf("MUST regression: exit %d, stdout %q; want 1 naming ES-1.2", code, stdout)
	}
	if code, stdout, _ := tck(t, "report", "diff", cur, old); code != 0 {
		t.Errorf("improvement: exit %d, stdout %q; want 0", code, stdout)
	}
}
