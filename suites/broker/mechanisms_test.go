package broker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/broker"
)

// unroutable is a NATS handle whose adapter claims a mandatory publish but
// stores it like any other: the broken client BR-7.1 exists for.
type unroutable struct{ mq.Broker }

func (u unroutable) PublishUnroutable(ctx context.Context, topic string, m mq.Message) (mq.PublishAck, error) {
	return u.Publish(ctx, topic, m)
}

// Mechanisms are found by type assertion on the handle (issue 36, item 3):
// a handle without mq.UnroutablePublisher or mq.PendingInspector makes the
// rules needing them not-applicable naming the interface; a handle that
// implements one, however badly, gets the rule, and a broken one fails it.
func TestMechanismsByTypeAssertion(t *testing.T) {
	tg := embedded(t, nats.Client{})
	plain := tg.Target
	open := plain.Open
	plain.Open = func(ctx context.Context) (mq.Broker, error) {
		b, err := open(ctx)
		return struct{ mq.Broker }{b}, err // hides every optional interface
	}
	rs := runner.Run("broker/plain", func() { broker.Register(plain) }, runner.Options{Rules: []string{"BR-7.1", "BR-4.1"}})
	seen := 0
	for _, r := range rs {
		want := map[string]string{"BR-7.1": "mq.UnroutablePublisher", "BR-4.1": "mq.PendingInspector"}[r.Rule]
		if want == "" {
			continue
		}
		seen++
		if r.Verdict != verdict.NotApplicable || !strings.Contains(r.Reason, want) {
			t.Errorf("%s on a plain handle: %s %q, want not-applicable naming %s", r.Rule, r.Verdict, r.Reason, want)
		}
	}

	if seen != 2 {
		t.Fatalf("%d of BR-7.1 and BR-4.1 reported", seen)
	}

	broken := tg.Target
	broken.Open = func(ctx context.Context) (mq.Broker, error) {
		b, err := open(ctx)
		return unroutable{b}, err
	}
	rs = runner.Run("broker/unroutable", func() { broker.Register(broken) }, runner.Options{Rules: []string{"BR-7.1"}})
	failed := false
	for _, r := range rs {
		if r.Rule == "BR-7.1" {
			failed = r.Verdict == verdict.Fail
			if !failed {
				t.Errorf("BR-7.1 on a handle that stores a mandatory publish nothing routes: %s %q, want fail", r.Verdict, r.Reason)
			}
		}
	}
	if !failed {
		t.Error("no failed BR-7.1 reported")
	}
}
