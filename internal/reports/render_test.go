package reports

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

func TestFigureRounding(t *testing.T) {
	cases := []struct {
		f    verdict.Figure
		want string
	}{
		{verdict.Figure{Value: 1.60398444, Unit: "s"}, "1.604 s"},
		{verdict.Figure{Value: 2.448290587, Unit: "s"}, "2.448 s"},
		{verdict.Figure{Value: 0.999223412, Unit: "s"}, "0.999 s"},
		{verdict.Figure{Value: 2.4, Unit: "s"}, "2.4 s"},
		{verdict.Figure{Value: float64(2), Unit: "s"}, "2 s"},
		{verdict.Figure{Value: 2, Unit: "s"}, "2 s"},
		{verdict.Figure{Value: 0.43, Unit: "ms"}, "0.4 ms"},
		{verdict.Figure{Value: 420.7, Unit: "ms"}, "421 ms"},
		{verdict.Figure{Value: 0.0499123, Unit: ""}, "0.04991"},
		{verdict.Figure{Value: []any{float64(1), float64(2), float64(3)}}, "1, 2, 3"},
		{verdict.Figure{Value: true}, "true"},
		{verdict.Figure{Value: "2m0s seed = 100ms real"}, "2m0s seed = 100ms real"},
	}
	for _, c := range cases {
		if got := figureText(c.f); got != c.want {
			t.Errorf("%v %s: %q, want %q", c.f.Value, c.f.Unit, got, c.want)
		}
	}
}

func TestTickText(t *testing.T) {
	cases := []struct {
		t, step time.Duration
		want    string
	}{
		{0, time.Second, "0"},
		{2 * time.Second, time.Second, "2 s"},
		{1500 * time.Millisecond, 500 * time.Millisecond, "1.5 s"},
		{40 * time.Millisecond, 20 * time.Millisecond, "40 ms"},
		{5 * time.Microsecond, 5 * time.Microsecond, "5 µs"},
	}
	for _, c := range cases {
		if got := tickText(c.t, c.step); got != c.want {
			t.Errorf("tick %v step %v: %q, want %q", c.t, c.step, got, c.want)
		}
	}
}

// TestSeedMarkShapes: the seed's two branches and its 10-vs-11-minute
// record are drawn as what happened: a dropped duplicate never as stored.
func TestSeedMarkShapes(t *testing.T) {
	cases := map[string]shape{
		"first publish, event_id kept for every retry (its ack lost)":                          shStored,
		"branch A: retry, same id, inside the window: dropped as a duplicate":                  shDuplicate,
		"retry, same id, inside the window: dropped":                                           shDuplicate,
		"the de-dupe window ends":                                                              shEnd,
		"branch B: retry, same id, past the window: stored again (a second copy)":              shAgain,
		"delivery 1: effect done, record (messageId) written, the ack lost":                    shEffect,
		"delivery 2: record found, skipped (the ack lost again)":                               shDuplicate,
		"the de-dupe record expires":                                                           shEnd,
		"delivery 3: no record, SearchIndex (upsert), Notify (not-idempotent) done again":      shAgain,
		"the producer crashes before publishing":                                               shCrash,
		"m-9 v2, a legitimate edit: the record for m-9 is found, v2 dropped":                   shLost,
		"redelivery: the record is found, Notify skipped for good":                             shLost,
		"no redelivery (it was acked): the effect is missing":                                  shLost,
		"aggregate a-2, requestId r-1: refused as a duplicate (a legitimate request lost)":     shRefused,
		"database transaction commits the change":                                              shStored,
		"the broker has no event: no consumer effect, nothing to redeliver (a reconciliation)": shLost,
	}
	for text, want := range cases {
		if got := markShape(text); got != want {
			t.Errorf("%q: drawn as %s, want %s", text, got, want)
		}
	}
	ops := map[string]shape{
		"publish|pos=1 stored":                          shStored,
		"publish|pos=1 duplicate":                       shDuplicate,
		"deliver|attempt=1 pos=1":                       shDelivered,
		"deliver|attempt=2 pos=1":                       shRedeliver,
		"deliver|attempt 3":                             shRedeliver,
		"ack|confirmed":                                 shAcked,
		"ack|lost by the kit: the broker never sees it": shLost,
		"crash|crash after-ack":                         shCrash,
		"arm crash|after-ack":                           shKit,
		"index upsert|written":                          shEffect,
		"index upsert|not applied":                      shDuplicate,
	}
	for k, want := range ops {
		action, result, _ := strings.Cut(k, "|")
		if got := opShape(history.Op{Action: action, Result: result, Outcome: history.OK}); got != want {
			t.Errorf("%s -> %s: drawn as %s, want %s", action, result, got, want)
		}
	}
}

// handReport is a run on two brokers, one lacking a capability, with a
// comparison, hazards of both owners, a timed timeline and the seed's plan.
func handReport(t *testing.T) *Report {
	t.Helper()
	p, err := profile.Load(filepath.Join("..", "..", "examples", "profiles", "seed-07-07.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pl := profile.Analyze(p)
	ms := time.Millisecond
	ops := []history.Op{
		{Start: 1 * ms, End: 2 * ms, Actor: "producer", Action: "publish", Value: "t id=br-1_3-branchA-1d5d", Outcome: history.OK, Result: "pos=1 stored"},
		{Start: 1600 * ms, End: 1601 * ms, Actor: "branch-A", Action: "publish", Value: "t id=br-1_3-branchA-1d5d", Outcome: history.OK, Result: "pos=1 duplicate"},
		{Start: 2400 * ms, End: 2401 * ms, Actor: "branch-B", Action: "publish", Value: "t id=br-1_3-branchB-77aa", Outcome: history.OK, Result: "pos=3 stored"},
	}
	res := func(tgt, rule string, v verdict.Verdict, reason string, ev *verdict.Evidence) verdict.Result {
		r := catalog.MustLookup(rule)
		return verdict.Result{Rule: rule, Suite: r.Suite, Target: tgt, Level: string(r.Level), Kind: string(r.Kind), Title: r.Title, Verdict: v, Reason: reason, Evidence: ev}
	}
	natsEv := &verdict.Evidence{Timeline: ops, Hazards: []string{"a fresh id on retry stores the intent twice"},
		SetupHazards: []string{"the kit's scratch server syncs every 2m"},
		Figures: []verdict.Figure{{Name: "wait by definition", Value: 2.4, Unit: "s"}, {Name: "declared window", Value: 2, Unit: "s"},
			{Name: "branch A retry at", Value: 1.60398444, Unit: "s"}}}
	cmp := &verdict.Evidence{Comparisons: []verdict.Comparison{{Setting: "stream EVENTS duplicates", Declared: "1m0s", Actual: "30s", Source: "server", Match: false}}}
	r := &Report{
		Kit: Kit{Name: "onceproof", Version: "test", GoVersion: "go1.26"},
		Run: Run{Command: "tck run", Started: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), DurationMs: 2500},
		Targets: []Target{
			{Info: target.Info{Name: "broker/nats", Suite: "broker", Mode: target.Embedded, Version: "nats-server 2.15.2", Config: map[string]string{"dedupeWindow": "2s", "sync": "sync_interval: 2m0s"}}, Status: "ran"},
			{Info: target.Info{Name: "broker/other", Suite: "broker", Mode: target.External, Address: "nats://127.0.0.1:4222", Version: "nats-server 2.10.0", Config: map[string]string{"dedupeWindow": "1m"}}, Status: "ran", ConfigFrom: ConfigFromProfile},
		},
		Plan: &pl,
		Results: []verdict.Result{
			res("broker/nats", "BR-1.3", verdict.Pass, "branch A dropped, branch B stored", natsEv),
			res("broker/other", "BR-1.3", verdict.NotApplicable, "the target declares no dedupe-window", &verdict.Evidence{}),
			res("broker/nats", "BR-1.2", verdict.Pass, "measured", &verdict.Evidence{}),
			res("broker/other", "BR-1.2", verdict.Fail, "declared 60 s, measured 30 s", cmp),
		},
	}
	r.Finish()
	return r
}

func TestHTMLIsADesignReviewDocument(t *testing.T) {
	r := handReport(t)
	var b bytes.Buffer
	if err := HTML(&b, r); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	br13 := catalog.MustLookup("BR-1.3")
	for _, want := range []string{
		br13.Contract, br13.Source, // each rule's contract sentence and source
		`id="glossary"`, "wait by definition", "random seed", "pos=", "recovered", "characterization", "emulator", "mutant",
		"Summary by suite and target", "Rules by targets", // the matrix: two brokers
		`title="the target declares no dedupe-window"`, "<sup>1</sup>", "not applicable on broker/other: the target declares no dedupe-window",
		"kit test settings", "declared by the pipeline profile", "declared (pipeline profile)",
		"read from the server", "sync = sync_interval: 2m0s", "nats-server 2.10.0",
		"the kit&#39;s test set-up (not a finding about the target)", "on a server the kit started with kit test settings",
		"window (kit test setting)", "1.604 s",
		"dropped as duplicate (not stored, not applied)", "stored / appended", "de-dupe window 2 s",
		"Pipeline profile seed-07-07", "retry-past-window", "What each acknowledgement proves",
		`"Noto Sans CJK SC","Noto Sans SC","Source Han Sans SC","PingFang SC","Microsoft YaHei",sans-serif`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	// One self-contained file: no script, nothing fetched.
	for _, bad := range []*regexp.Regexp{regexp.MustCompile(`(?i)<script`), regexp.MustCompile(`(?i)<link`), regexp.MustCompile(`(?i)@import|@font-face|url\(`),
		regexp.MustCompile(`(?i)(src|href)="(https?:)?//`)} {
		if m := bad.FindString(html); m != "" {
			t.Errorf("report.html is not self-contained: %q", m)
		}
	}
	// No figure with the float's nine decimals.
	if m := regexp.MustCompile(`\d\.\d{5,}`).FindString(html); m != "" {
		t.Errorf("an unrounded figure: %s", m)
	}
	// A dropped duplicate and a stored message are drawn differently.
	svg := html[strings.Index(html, `<svg class="tl"`):]
	if !strings.Contains(svg, `<circle cx=`) || !strings.Contains(svg, `<rect class="m"`) {
		t.Error("the timeline does not draw the stored message and the duplicate with different shapes")
	}
}

func TestMarkdownSaysTheSame(t *testing.T) {
	r := handReport(t)
	var b bytes.Buffer
	if err := Markdown(&b, r); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		catalog.MustLookup("BR-1.3").Contract, "## Glossary", "**wait by definition**",
		"## Rules by targets", "| BR-1.3 | MUST | pass | n/a [1] |", "1. not applicable on broker/other: the target declares no dedupe-window",
		"**kit test settings**", "**declared by the pipeline profile**", "| stream EVENTS duplicates | 1m0s | 30s | read from the server | **NO** |",
		"(the kit's test set-up (not a finding about the target))", "1.604 s",
		"#### H1 BR-1.3 `retry-past-window`", "| 2 | t=4 min | branch A: retry, same id, inside the window: dropped as a duplicate | dropped as duplicate",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if m := regexp.MustCompile(`\d\.\d{5,}`).FindString(md); m != "" {
		t.Errorf("an unrounded figure: %s", m)
	}
}

// TestPlanReport: a plan alone exits as tck plan --profile does, also after
// a round trip through results.json.
func TestPlanReport(t *testing.T) {
	for file, want := range map[string]int{"seed-07-07.yaml": ExitMustFailed, "hazard-free.yaml": ExitConformant} {
		p, err := profile.Load(filepath.Join("..", "..", "examples", "profiles", file))
		if err != nil {
			t.Fatal(err)
		}
		pl := profile.Analyze(p)
		r := PlanReport(&pl, Kit{Name: "onceproof"}, "tck plan --profile "+file, time.Now())
		if r.Summary.ExitCode != want {
			t.Errorf("%s: exit %d, want %d (%s)", file, r.Summary.ExitCode, want, r.Summary.Conclusion)
		}
		dir := t.TempDir()
		if err := WriteAll(dir, r); err != nil {
			t.Fatal(err)
		}
		back, err := ReadBundle(dir)
		if err != nil {
			t.Fatal(err)
		}
		if back.Summary.ExitCode != want || back.Plan == nil || len(back.Plan.Hazards) != len(pl.Hazards) {
			t.Errorf("%s: after a round trip exit %d, plan %v", file, back.Summary.ExitCode, back.Plan != nil)
		}
	}
}
