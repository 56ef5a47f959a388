// Package ginkgotest checks the Ginkgo driver against the engine: the rules
// of every suite, registered with Ginkgo as an author's suite registers
// them, give the verdicts the engine (tck run) gives on the same targets.
// Ginkgo keeps one suite per process, so this is a test binary of its own.
package ginkgotest_test

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/formatter"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// drive is one reference target and the rules both drivers run on it.
type drive struct {
	ref   target.Ref
	rules []string // nil: every rule of the suite
}

var drives = []drive{
	{target.Ref{Suite: "eventstore", Name: "memory"}, nil},
	{target.Ref{Suite: "broker", Name: "nats"}, []string{"BR-1.1", "BR-2.1", "BR-2.2", "BR-6.1"}},
	{target.Ref{Suite: "consumer", Name: "reference"}, []string{"CO-1.1", "CO-1.2", "CO-2.1"}},
	{target.Ref{Suite: "api", Name: "reference"}, []string{"API-1.1", "API-1.2", "API-1.6", "API-2.1"}},
}

// quietT takes Ginkgo's own pass or fail: the verdicts are compared below.
type quietT struct{}

func (quietT) Fail() {}

func TestGinkgoDriverGivesTheEngineVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: starts a target of every suite")
	}
	ctx := context.Background()
	reg := registry.Targets()
	engine := map[string]verdict.Verdict{}
	// paced: the pairs a driver left undecided or skipped for the host's
	// pace (a store measured too slow for its budget, the kit's own
	// lateness): two runs on a loaded host may differ there, and the
	// drivers are not what differs.
	paced := map[string]string{}
	var labels []string
	for _, d := range drives {
		kind, ref, err := reg.Resolve(d.ref)
		if err != nil {
			t.Fatal(err)
		}
		st, err := kind.Start(ctx, ref)
		if err != nil {
			t.Fatalf("%s: %v", ref.Key(), err)
		}
		t.Cleanup(func() { _ = st.Stop() })
		for _, r := range st.Rules().Run(ctx, target.RunOptions{Target: ref.Key(), Rules: d.rules}) {
			if d.rules == nil || slices.Contains(d.rules, r.Rule) {
				engine[ref.Key()+" "+r.Rule] = r.Verdict
				if pacedOut(r) {
					paced[ref.Key()+" "+r.Rule] = r.Reason
				}
			}
		}
		if d.rules == nil {
			labels = append(labels, d.ref.Suite)
		}
		labels = append(labels, d.rules...)
		ginkgo.Describe(ref.Key(), func() { st.Register() })
	}

	ginkgoVerdicts := map[string]verdict.Verdict{}
	ginkgo.ReportAfterEach(func(r types.SpecReport) {
		if len(r.ContainerHierarchyTexts) == 0 {
			return
		}
		res := spec.ResultOf(r.ContainerHierarchyTexts[0], r, nil)
		if res.Rule != "" {
			ginkgoVerdicts[res.Target+" "+res.Rule] = res.Verdict
			if pacedOut(res) {
				paced[res.Target+" "+res.Rule] = res.Reason
			}
		}
	})
	cfg := types.NewDefaultSuiteConfig()
	cfg.Timeout = 30 * time.Minute
	cfg.LabelFilter = strings.Join(labels, " || ")
	rep := types.NewDefaultReporterConfig()
	rep.Succinct = true
	saved := formatter.ColorableStdOut
	formatter.ColorableStdOut = io.Discard
	defer func() { formatter.ColorableStdOut = saved }()
	ginkgo.RunSpecs(quietT{}, "onceproof drivers", cfg, rep)

	if len(engine) < 20 {
		t.Fatalf("the engine ran %d rules", len(engine))
	}
	for k, v := range engine {
		if g, ok := ginkgoVerdicts[k]; !ok || g != v {
			if why, ok := paced[k]; ok && g != "" {
				t.Logf("%s: the engine gives %s, Ginkgo %s, for the host's pace: %s", k, v, g, why)
				continue
			}
			t.Errorf("%s: the engine gives %s, Ginkgo %s", k, v, g)
		}
	}
}

// pacedOut: a result skipped or unknown because of the host's pace, as its
// reason says.
func pacedOut(r verdict.Result) bool {
	if r.Verdict != verdict.Skipped && r.Verdict != verdict.Unknown {
		return false
	}
	for _, w := range []string{"at the store's pace", "ran late", "late in all", "was paused", "not scheduled"} {
		if strings.Contains(r.Reason, w) {
			return true
		}
	}
	return false
}
