package broker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/broker"
)

// TestDisruptVerdicts: a Disrupt error wrapping ErrViolation (a probe the
// target carried across its fault saw a breach) fails BR-2.9, even though
// the queue itself lost nothing; any other Disrupt error leaves it unknown.
func TestDisruptVerdicts(t *testing.T) {
	ctx := context.Background()
	e, err := nats.StartEmbedded(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	open := func(ctx context.Context) (mq.Broker, error) { return nats.Connect(ctx, e.URL(), nats.Options{}) }
	b, err := open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	caps := b.Capabilities()
	b.Close()
	for _, tc := range []struct {
		name string
		err  error
		want verdict.Verdict
	}{
		{"violation", fmt.Errorf("%w: two copies of a retried id", broker.ErrViolation), verdict.Fail},
		{"not applied", errors.New("no leader to kill"), verdict.Unknown},
		{"clean", nil, verdict.Pass},
	} {
		tg := broker.Target{Open: open, Caps: caps, Windows: broker.Windows{Messages: 60},
			Disrupt: func(ctx context.Context, rule, topic string, rec *history.Recorder, ev *verdict.Evidence) error {
				return tc.err
			}}
		res := runner.Run("broker/nats", func() { broker.Register(tg) }, runner.Options{Rules: []string{"BR-2.9"}})
		for _, r := range res {
			if r.Rule != "BR-2.9" {
				continue
			}
			if r.Verdict != tc.want {
				t.Errorf("%s: BR-2.9 %s (%s), want %s", tc.name, r.Verdict, r.Reason, tc.want)
			}
			if tc.want == verdict.Fail && !strings.Contains(r.Reason, "violation") {
				t.Errorf("%s: reason %q does not name the violation", tc.name, r.Reason)
			}
		}
	}
}
