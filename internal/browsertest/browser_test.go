package browsertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/runner/runnertest"
	"github.com/onceproof/tck/internal/stall"
	"github.com/onceproof/tck/internal/verdict"

	"github.com/onceproof/tck/internal/testbin"
)

// start opens the browser, or fails the test when TCK_REQUIRE_BROWSER=1
// (CI) and skips it, naming why, otherwise.
func start(t *testing.T, env ...string) *Browser {
	t.Helper()
	// The browser lives as long as the test: a bound on its whole life
	// ran out while a loaded host was still producing the reports the
	// test loads (TestAuthorReportInBrowser, 350 s beside four CPU
	// burners). Each page load keeps a bound of its own (Load).
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	b, err := Start(ctx, env...)
	if err != nil {
		if errors.Is(err, ErrNoBrowser) && os.Getenv("TCK_REQUIRE_BROWSER") != "1" {
			t.Skipf("skipped: %v (TCK_REQUIRE_BROWSER=1 makes this a failure)", err)
		}
		t.Fatalf("the browser test needs headless Chromium: %v", err)
	}
	t.Cleanup(b.Close)
	return b
}

// artifacts is where screenshots go: $TCK_BROWSER_ARTIFACTS, kept after
// the test (CI uploads it, a developer looks at it), else the test's own
// temporary directory, removed with it.
func artifacts(t *testing.T) string {
	if d := os.Getenv("TCK_BROWSER_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// pieces is how many 3000 px screenshots to keep of a page:
// $TCK_BROWSER_PIECES, else the top of the page only.
func pieces() int {
	n, _ := strconv.Atoi(os.Getenv("TCK_BROWSER_PIECES"))
	return max(n, 1)
}

func save(t *testing.T, dir, name string, png []byte) {
	t.Helper()
	if len(png) == 0 {
		t.Errorf("%s: no screenshot taken", name)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// seedPlanReport writes the seed scenario's plan report (examples/profiles/
// seed-07-07.yaml) into a temporary directory and returns its report.html.
func seedPlanReport(t *testing.T) string {
	t.Helper()
	return planReport(t, filepath.Join("..", "..", "examples", "profiles", "seed-07-07.yaml"))
}

// planReport writes the plan report of one profile and returns its report.html.
func planReport(t *testing.T, file string) string {
	t.Helper()
	p, err := profile.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	pl := profile.Analyze(p)
	dir := t.TempDir()
	r := reports.PlanReport(&pl, reports.Kit{Name: "onceproof", Version: "test", GoVersion: runtime.Version()},
		"tck plan --profile "+filepath.Base(file), time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	if err := reports.WriteAll(dir, r); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, reports.FileHTML)
}

// realRun builds the kit and runs it on several targets: two event stores
// and two brokers (embedded NATS and Kafka on kfake), so both suites show a
// matrix, the brokers' with not-applicable cells, and NATS gives timed
// timelines.
func realRun(t *testing.T) (html string, rep *reports.Report) {
	t.Helper()
	return tckRun(t, "--target", "eventstore/sqlite", "--target", "eventstore/memory", "--target", "broker/nats", "--target", "broker/kafka")
}

// tckBin is the kit, built once per test binary: every tckRun runs the same
// source.
var tckBin = testbin.Binary{Pkg: "github.com/onceproof/tck/cmd/tck"}

func TestMain(m *testing.M) {
	code := m.Run()
	tckBin.Remove()
	os.Exit(code)
}

// tckBinary is the kit, built once per test binary.
func tckBinary(t *testing.T) string { return tckBin.Path(t) }

// tckRun runs the kit (built once: tckBinary) with args, returning its report.
func tckRun(t *testing.T, args ...string) (html string, rep *reports.Report) {
	t.Helper()
	dir := t.TempDir()
	bin := tckBinary(t)
	out := filepath.Join(dir, "run")
	run := exec.Command(bin, append([]string{"run", "--quiet", "--out", out}, args...)...)
	msg, err := run.CombinedOutput()
	var exit *exec.ExitError
	// Exit 0, 1 or 2 all wrote a report; the verdicts are not this test's business.
	if err != nil && (!errors.As(err, &exit) || exit.ExitCode() > 2) {
		t.Fatalf("tck run: %v\n%s", err, msg)
	}
	rep, err = reports.ReadBundle(out)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(out, reports.FileHTML), rep
}

// raceFailure runs the race mutant on ES-2.3 until it fails, at most
// runnertest.Runs times: a race is stochastic, and a loaded host can keep
// the mutant's calls from overlapping, so one run may pass it (or leave it
// undecided) honestly. Each run that did not fail must say so honestly: a
// pass rests on the contended trials its power target needs. When no run
// failed, an undecided last run whose reason names the kit's lateness or
// its contended trials skips the test, saying so; a pass in every run
// fails it.
func raceFailure(t *testing.T) (string, *reports.Report) {
	t.Helper()
	for run := 1; ; run++ {
		file, rep := tckRun(t, "--target", "eventstore/mutant-request-check-then-write", "--rule", "ES-2.3")
		if len(rep.Summary.MustFailed) > 0 {
			return file, rep
		}
		var r verdict.Result
		for _, x := range rep.Results {
			if x.Rule == "ES-2.3" {
				r = x
			}
		}
		contended, needed := figure(r, "contended trials"), figure(r, "contended trials needed")
		if r.Verdict == verdict.Pass && (needed <= 0 || contended < needed) {
			t.Errorf("run %d: ES-2.3 passed the race mutant with %v contended trials of the %v needed: a pass must rest on its power target", run, contended, needed)
		}
		if run < runnertest.Runs {
			t.Logf("run %d of at most %d: the race mutant's ES-2.3 is %s (%v contended trials of %v needed; a loaded host can keep its calls from overlapping), run again: %s", run, runnertest.Runs, r.Verdict, contended, needed, r.Reason)
			continue
		}
		if r.Verdict == verdict.Unknown && (stall.Named(r.Reason) || strings.Contains(r.Reason, "contended trials")) {
			t.Skipf("the race mutant's ES-2.3 is still undecided after %d runs (a loaded host: %v contended trials of %v needed), not a pass: %s", run, contended, needed, r.Reason)
		}
		t.Fatalf("the race mutant was not failed by ES-2.3 in %d runs: last %s: %s (%+v)", run, r.Verdict, r.Reason, rep.Summary)
	}
}

// figure is the number named name in r's evidence (0: none).
func figure(r verdict.Result, name string) float64 {
	if r.Evidence == nil {
		return 0
	}
	for _, f := range r.Evidence.Figures {
		if f.Name != name {
			continue
		}
		switch v := f.Value.(type) {
		case float64:
			return v
		case int:
			return float64(v)
		}
	}
	return 0
}

// clean asserts what every report must show a reader's browser.
func clean(t *testing.T, name string, p *Page) {
	t.Helper()
	for _, e := range p.Errors {
		t.Errorf("%s: console error: %s", name, e)
	}
	for _, r := range p.Requests {
		t.Errorf("%s: network request: %s", name, r)
	}
	if p.SVGs > 0 && p.Labels == 0 {
		t.Errorf("%s: no SVG label measured", name)
	}
	for _, o := range p.Overlaps {
		t.Errorf("%s: SVG labels overlap: %s", name, o)
	}
	if !p.CJK.Renders() {
		t.Errorf("%s: the seed's Chinese quote does not render as text (tofu): %+v", name, p.CJK)
	}
}

func TestReportInBrowser(t *testing.T) {
	b := start(t)
	shots := artifacts(t)

	t.Run("seed plan report", func(t *testing.T) {
		file := seedPlanReport(t)
		p, err := b.Load(file, Options{Shot: "#h1 svg", Pieces: pieces()})
		if err != nil {
			t.Fatal(err)
		}
		clean(t, "plan", p)
		for _, want := range []string{"BR-1.3", "CO-3.1", "CO-1.2", "CO-1.3", "retry-past-window", "what each acknowledgement proves"} {
			if !strings.Contains(strings.ToLower(p.Text), strings.ToLower(want)) {
				t.Errorf("plan report: %q not visible", want)
			}
		}
		for i, png := range p.Pieces {
			save(t, shots, fmt.Sprintf("seed-plan-%d.png", i), png)
		}
		save(t, shots, "seed-plan-H1-timeline.png", p.SVGPNG)
	})

	// Every example profile's timelines keep their labels apart.
	t.Run("the other example profiles' plan reports", func(t *testing.T) {
		files, err := filepath.Glob(filepath.Join("..", "..", "examples", "profiles", "*.yaml"))
		if err != nil || len(files) < 2 {
			t.Fatalf("example profiles: %v %v", files, err)
		}
		for _, f := range files {
			if filepath.Base(f) == "seed-07-07.yaml" {
				continue
			}
			p, err := b.Load(planReport(t, f), Options{})
			if err != nil {
				t.Fatal(err)
			}
			name := filepath.Base(f)
			for _, e := range p.Errors {
				t.Errorf("%s: console error: %s", name, e)
			}
			for _, r := range p.Requests {
				t.Errorf("%s: network request: %s", name, r)
			}
			for _, o := range p.Overlaps {
				t.Errorf("%s: SVG labels overlap: %s", name, o)
			}
		}
	})

	t.Run("report of a run on several targets", func(t *testing.T) {
		file, rep := realRun(t)
		p, err := b.Load(file, Options{Shot: "svg.tl", Pieces: pieces(), FirstScreen: true})
		if err != nil {
			t.Fatal(err)
		}
		clean(t, "run", p)
		firstScreen(t, "run", p, rep)
		save(t, shots, "run-first-screen.png", p.FirstScreenPNG)
		// The budget grows with the catalog, not with the run's length: 300 KB
		// held 89 rules; the NATS batch rules (BR-8.x, about 18 KB of
		// sections on broker/nats) and the not-applicable rows of the share
		// and batch rules brought 97 rules to about 315-325 KB.
		if fi, err := os.Stat(file); err != nil || fi.Size() >= 350_000 {
			t.Errorf("the report of four targets is not under 350 KB: %v %v", fi.Size(), err)
		}
		if len(rep.Targets) < 4 {
			t.Fatalf("the run has %d targets, want 4", len(rep.Targets))
		}
		if len(rep.Results) == 0 {
			t.Fatal("the run has no results")
		}
		for _, r := range rep.Results {
			if !strings.Contains(p.Text, r.Rule) {
				t.Errorf("rule %s of %s is not visible", r.Rule, r.Target)
			}
		}
		if !strings.Contains(p.Text, "Rules by targets") {
			t.Error("no matrix of rules by targets for a suite on two targets")
		}
		// Each not-applicable cell: its reason on hover and in a footnote.
		na := 0
		for _, r := range rep.Results {
			if r.Verdict == verdict.NotApplicable {
				na++
			}
		}
		if na == 0 || len(p.NotApplicable) != na {
			t.Errorf("%d not-applicable results, %d not-applicable matrix cells", na, len(p.NotApplicable))
		}
		for _, c := range p.NotApplicable {
			if c.Title == "" || c.Footnote == "" || !strings.Contains(c.Footnote, c.Title) {
				t.Errorf("%s: not-applicable cell without its reason on hover and in a footnote: %+v", c.Rule, c)
			}
		}
		for i, png := range p.Pieces {
			save(t, shots, fmt.Sprintf("run-%d.png", i), png)
		}
		save(t, shots, "run-first-timeline.png", p.SVGPNG)
	})

	// A failure: the first screen holds the verdict and the failed rule
	// with its reason, linked to its section, and the failure's timeline
	// rings and labels the two appends that both won with one request id.
	t.Run("report of a failure", func(t *testing.T) {
		file, rep := raceFailure(t)
		p, err := b.Load(file, Options{Pieces: pieces(), FirstScreen: true})
		if err != nil {
			t.Fatal(err)
		}
		clean(t, "failure", p)
		firstScreen(t, "failure", p, rep)
		won := 0
		for _, m := range p.Marks {
			if strings.HasPrefix(m, "won: v") && strings.Contains(m, "req=") {
				won++
			}
		}
		if won < 2 || p.Rings < 2 {
			t.Errorf("the failure's timeline marks %d winning appends (%d ringed), want both that stored one request id: %q", won, p.Rings, p.Marks)
		}
		save(t, shots, "failure-first-screen.png", p.FirstScreenPNG)
		for i, png := range p.Pieces {
			save(t, shots, fmt.Sprintf("failure-%d.png", i), png)
		}
	})

	// The checks can fail: a script error, a console.error, a fetched image
	// and two overlapping labels injected into a copy of a clean report are
	// each reported.
	t.Run("a console error, a network request and overlapping labels are caught", func(t *testing.T) {
		src, err := os.ReadFile(seedPlanReport(t))
		if err != nil {
			t.Fatal(err)
		}
		bad := strings.Replace(string(src), "</body>",
			`<script>console.error("injected error"); null.boom();</script><img src="http://203.0.113.7/x.png" alt="">`+
				`<svg width="200" height="40"><text x="10" y="20">label one</text><text x="30" y="24">label two</text></svg>`+"</body>", 1)
		file := filepath.Join(t.TempDir(), "report.html")
		if err := os.WriteFile(file, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := b.Load(file, Options{})
		if err != nil {
			t.Fatal(err)
		}
		joined := strings.Join(p.Errors, "\n")
		if !strings.Contains(joined, "injected error") {
			t.Errorf("console.error not reported; errors: %q", p.Errors)
		}
		if !strings.Contains(joined, "boom") && !strings.Contains(joined, "null") {
			t.Errorf("uncaught exception not reported; errors: %q", p.Errors)
		}
		overlap := false
		for _, o := range p.Overlaps {
			overlap = overlap || strings.Contains(o, "label one") && strings.Contains(o, "label two")
		}
		if !overlap {
			t.Errorf("two overlapping labels were not reported; overlaps: %q", p.Overlaps)
		}
		found := false
		for _, r := range p.Requests {
			found = found || strings.Contains(r, "203.0.113.7")
		}
		if !found {
			t.Errorf("the image request was not seen; requests: %q", p.Requests)
		}
	})
}

// TestTofuIsDetected: with fontconfig pointed at an empty font directory
// (as on a machine without fonts-noto-cjk), the CJK check must report tofu.
// This is what makes the CJK assertion above one that can fail.
func TestTofuIsDetected(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "fonts.conf")
	empty := filepath.Join(dir, "nofonts")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte(`<?xml version="1.0"?><!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig><dir>`+empty+`</dir><cachedir>`+filepath.Join(dir, "cache")+`</cachedir></fontconfig>`), 0o644); err != nil {
		t.Fatal(err)
	}
	b := start(t, "FONTCONFIG_FILE="+conf)
	p, err := b.Load(seedPlanReport(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.CJK.Sample == "" {
		t.Fatal("no Chinese sample found in the plan report")
	}
	if p.CJK.Renders() {
		t.Errorf("with no font installed the CJK check still says the quote renders: %+v", p.CJK)
	}
}

// firstScreen asserts what a 1400x1000 window shows as the report opens:
// the verdict, each failed or undecided MUST rule with the start of its
// reason and a link to its section, then the hazards.
func firstScreen(t *testing.T, name string, p *Page, rep *reports.Report) {
	t.Helper()
	text := strings.Join(strings.Fields(p.FirstScreen), " ")
	if !strings.Contains(text, rep.Summary.Conclusion) {
		t.Errorf("%s: the verdict %q is not on the first screen: %q", name, rep.Summary.Conclusion, text)
	}
	for _, r := range rep.Results {
		if r.Level != "MUST" || (r.Verdict != verdict.Fail && r.Verdict != verdict.Unknown) {
			continue
		}
		reason := strings.Join(strings.Fields(r.Reason), " ")
		if len(reason) > 40 {
			reason = reason[:40]
		}
		if !strings.Contains(text, r.Rule) || !strings.Contains(text, reason) {
			t.Errorf("%s: %s on %s and its reason %q are not on the first screen", name, r.Rule, r.Target, reason)
		}
		linked := false
		for _, l := range p.FirstScreenLinks {
			linked = linked || strings.Contains(l.Text, r.Rule) && l.Target != "" && strings.Contains(l.Target, strings.ReplaceAll(r.Rule, ".", "_"))
		}
		if !linked {
			t.Errorf("%s: %s has no link to its section on the first screen: %+v", name, r.Rule, p.FirstScreenLinks)
		}
	}
	// What a missing mechanism leaves to others is on the first screen too.
	for _, g := range rep.Gaps {
		if !strings.Contains(text, g.Label()+" on "+g.Target+": "+g.Missing) {
			t.Errorf("%s: the gap %s on %s is not on the first screen: %q", name, g.Capability, g.Target, text)
		}
	}
	if len(rep.Hazards) > 0 && !strings.Contains(text, "Hazards found by the run") {
		t.Errorf("%s: the run's hazards are not on the first screen: %q", name, text)
	}
}
