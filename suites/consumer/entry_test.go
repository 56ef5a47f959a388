package consumer_test

import (
	"context"
	"testing"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/consumer"
)

// UnknownIsSkip and ReportTo as an author writes them: a target the kit
// cannot run (no broker, no embedded option) leaves every rule unknown,
// which skips its subtest instead of failing it, and the report written to
// the folder holds them as unknown, never as a pass.
func TestUnknownIsSkipAndReportTo(t *testing.T) {
	dir := t.TempDir()
	tgt := consumer.Target{New: factoryOf(func(context.Context, co.Delivery) error { return nil })}
	t.Run("check", func(t *testing.T) {
		consumer.Check(t, tgt, consumer.UnknownIsSkip(), consumer.ReportTo(dir))
	})
	rep, err := reports.ReadBundle(dir)
	if err != nil {
		t.Fatalf("the report ReportTo wrote: %v", err)
	}
	unknown := 0
	for _, r := range rep.Results {
		if r.Verdict == verdict.Pass {
			t.Errorf("%s: pass without a broker", r.Rule)
		}
		if r.Verdict == verdict.Unknown {
			unknown++
		}
	}
	if unknown == 0 {
		t.Fatalf("no unknown verdict in the report (%d results)", len(rep.Results))
	}
}
