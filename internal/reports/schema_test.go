package reports_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/onceproof/tck/adapters/eventstore/memory"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/eventstore"
)

// schemaFile is the published schema of results.json.
var schemaFile = filepath.Join("..", "..", "docs", "results.schema.json")

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	s, err := jsonschema.NewCompiler().Compile(schemaFile)
	if err != nil {
		t.Fatalf("docs/results.schema.json: %v", err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, file string) error {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(inst)
}

// TestResultsSchema: real results.json files (a run of the event-store
// rules through the CLI's runner, with an unavailable target beside it; a
// profile's plan; an author's report from Check) satisfy the published
// schema, and one with an unknown verdict does not.
func TestResultsSchema(t *testing.T) {
	s := compileSchema(t)
	kit := reports.Kit{Name: "onceproof", Version: "test", GoVersion: runtime.Version()}

	// A run, as tck run writes it.
	db := memory.NewDB()
	tg := eventstore.Target{Open: func(context.Context) (es.EventStore, error) { return db.Open(), nil },
		Race: eventstore.RaceConfig{Cap: 200 * time.Millisecond}}
	started := time.Now()
	results := runner.Run("eventstore/memory", func() { eventstore.Register(tg) }, runner.Options{})
	rep := &reports.Report{Kit: kit,
		Run: reports.Run{Command: "tck run --target eventstore/memory", Started: started, Finished: time.Now(), Suites: []string{"eventstore"}},
		Targets: []reports.Target{
			{Info: target.Info{Name: "eventstore/memory", Suite: "eventstore", Mode: target.Embedded, Address: "embedded"}, Status: "ran"},
			{Info: target.Info{Name: "eventstore/postgres", Suite: "eventstore", Mode: target.External, Address: "postgres://***@127.0.0.1:1/x"}, Status: "unavailable", Error: "connection refused"},
		},
		Results: results}
	rep.Finish()
	run := t.TempDir()
	if err := reports.WriteAll(run, rep); err != nil {
		t.Fatal(err)
	}

	// A plan, as tck plan --profile --out writes it.
	p, err := profile.Load(filepath.Join("..", "..", "examples", "profiles", "seed-07-07.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pl := profile.Analyze(p)
	plan := t.TempDir()
	if err := reports.WriteAll(plan, reports.PlanReport(&pl, kit, "tck plan --profile seed-07-07.yaml", started)); err != nil {
		t.Fatal(err)
	}

	// An author's report, as Check writes it with TCK_REPORT_DIR.
	author := t.TempDir()
	t.Run("author", func(t *testing.T) {
		// The race rules end unknown at this short cap: reported as skips.
		eventstore.Check(t, tg, eventstore.ReportTo(author), eventstore.UnknownIsSkip())
	})

	// A broker run with a rule not applicable for a missing mechanism: its
	// missing capability and the report's gap.
	m := catalog.MustLookup("BR-1.1")
	gapRep := &reports.Report{Kit: kit,
		Run:     reports.Run{Command: "tck run --suite broker --target broker/redis", Started: started, Finished: time.Now(), Suites: []string{"broker"}},
		Targets: []reports.Target{{Info: target.Info{Name: "broker/redis", Suite: "broker", Mode: target.External, Address: "redis://127.0.0.1:6379"}, Status: "ran"}},
		Results: []verdict.Result{{Rule: m.ID, Suite: m.Suite, Target: "broker/redis", Level: string(m.Level), Kind: string(m.Kind), Title: m.Title,
			Verdict: verdict.NotApplicable, Reason: "the target does not declare the capability dedupe-window", Missing: []string{string(catalog.CapBrokerDedupe)}}}}
	gapRep.Finish()
	if len(gapRep.Gaps) != 1 {
		t.Fatalf("gaps %+v, want the de-dupe one", gapRep.Gaps)
	}
	gaps := t.TempDir()
	if err := reports.WriteAll(gaps, gapRep); err != nil {
		t.Fatal(err)
	}

	for name, dir := range map[string]string{"run": run, "plan": plan, "author": author, "gaps": gaps} {
		if err := validate(t, s, filepath.Join(dir, reports.FileJSON)); err != nil {
			t.Errorf("%s: results.json does not satisfy docs/results.schema.json: %v", name, err)
		}
	}

	// The schema can fail: an unknown verdict is refused.
	bad := *rep
	bad.Results = append([]verdict.Result(nil), rep.Results...)
	bad.Results[0].Verdict = "maybe"
	badDir := t.TempDir()
	if err := reports.WriteAll(badDir, &bad); err != nil {
		t.Fatal(err)
	}
	if err := validate(t, s, filepath.Join(badDir, reports.FileJSON)); err == nil || !strings.Contains(err.Error(), "/results/0/verdict") {
		t.Errorf("a verdict \"maybe\" satisfies the schema: %v", err)
	}
}
