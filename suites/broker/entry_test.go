package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/broker"
)

// UnknownIsSkip and ReportTo as an author writes them: a broker that cannot
// be opened leaves every rule undecided, which skips its subtest instead of
// failing it, and the report written to the folder holds no pass or fail.
func TestCheckReportToUnknownIsSkip(t *testing.T) {
	dir := t.TempDir()
	tg := broker.Target{
		Open:   func(context.Context) (mq.Broker, error) { return nil, errors.New("connection refused") },
		Caps:   mq.Capabilities{AckWait: true, DedupeWindow: time.Second},
		Budget: 5 * time.Second,
	}
	t.Run("check", func(t *testing.T) { broker.Check(t, tg, broker.UnknownIsSkip(), broker.ReportTo(dir)) })
	rep, err := reports.ReadBundle(dir)
	if err != nil {
		t.Fatalf("the report ReportTo wrote: %v", err)
	}
	unknown := 0
	for _, r := range rep.Results {
		switch r.Verdict {
		case verdict.Pass, verdict.Fail:
			t.Errorf("%s: %s on a broker that cannot be opened: %s", r.Rule, r.Verdict, r.Reason)
		case verdict.Unknown:
			unknown++
		}
	}
	if unknown == 0 {
		t.Fatalf("no unknown in the report (%d results)", len(rep.Results))
	}
}
