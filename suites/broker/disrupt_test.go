package broker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/broker"
)

// queueRun runs BR-2.9 alone against tg through Register.
func queueRun(t *testing.T, tg registry.BrokerBinding, opts ...broker.Option) verdict.Result {
	t.Helper()
	res := runner.Run("broker/nats", func() { broker.Register(tg.Target, append([]broker.Option{tg.Hooks()}, opts...)...) }, runner.Options{Rules: []string{"BR-2.9"}})
	i := slices.IndexFunc(res, func(r verdict.Result) bool { return r.Rule == "BR-2.9" })
	if i < 0 {
		t.Fatalf("no BR-2.9 in %+v", res)
	}
	return res[i]
}

func figure(r verdict.Result, name string) (any, bool) {
	for _, f := range r.Evidence.Figures {
		if f.Name == name {
			return f.Value, true
		}
	}
	return nil, false
}

// TestDisruptVerdicts: a Disrupt error wrapping ErrViolation (a probe the
// target carried across its fault saw a breach) fails BR-2.9, even though
// the queue itself lost nothing; any other Disrupt error leaves it unknown.
// What the fault writes to its Log lands in the rule's timeline and
// evidence.
func TestDisruptVerdicts(t *testing.T) {
	tg := embedded(t, nats.Client{})
	tg.Windows = kithooks.Windows{Messages: 60}
	for _, tc := range []struct {
		name string
		err  error
		want verdict.Verdict
	}{
		{"violation", fmt.Errorf("%w: two copies of a retried id", kithooks.ErrViolation), verdict.Fail},
		{"not applied", errors.New("no leader to kill"), verdict.Unknown},
		{"clean", nil, verdict.Pass},
	} {
		tg.Disrupt = func(ctx context.Context, rule, topic string, log verdict.Log) error {
			log.Step("nemesis", "kill", "n1", nil)
			log.Step("nemesis", "restart", "n1", errors.New("refused"))
			log.Note("observer", "leader", topic, "n1 -> n2")
			log.Figure("stream leader changes", 1, "changes")
			log.Notef("%s: killed n1 on %s", rule, topic)
			return tc.err
		}
		r := queueRun(t, tg)
		if r.Verdict != tc.want {
			t.Errorf("%s: BR-2.9 %s (%s), want %s", tc.name, r.Verdict, r.Reason, tc.want)
		}
		if tc.want == verdict.Fail && !strings.Contains(r.Reason, "violation") {
			t.Errorf("%s: reason %q does not name the violation", tc.name, r.Reason)
		}
		if v, ok := figure(r, "stream leader changes"); !ok || v != 1 {
			t.Errorf("%s: the fault's figure is missing: %v", tc.name, r.Evidence.Figures)
		}
		if !slices.ContainsFunc(r.Evidence.Notes, func(n string) bool { return strings.Contains(n, "BR-2.9: killed n1") }) {
			t.Errorf("%s: the fault's note is missing: %v", tc.name, r.Evidence.Notes)
		}
		steps := map[string]string{}
		for _, op := range r.Evidence.Timeline {
			if op.Actor == "nemesis" || op.Actor == "observer" {
				steps[op.Action] = string(op.Outcome) + " " + op.Result
			}
		}
		if steps["kill"] != "ok " || steps["restart"] != "fail refused" || steps["leader"] != "ok n1 -> n2" {
			t.Errorf("%s: the fault's steps on the timeline: %v", tc.name, steps)
		}
	}
}

// TestUnknownIsSkip: an undecided rule is unknown through Register with or
// without the opt-out (the opt-out only makes it a Ginkgo skip).
func TestUnknownIsSkip(t *testing.T) {
	tg := embedded(t, nats.Client{})
	tg.Windows = kithooks.Windows{Messages: 30}
	tg.Disrupt = func(context.Context, string, string, verdict.Log) error { return errors.New("no leader to kill") }
	for _, opts := range [][]broker.Option{nil, {broker.UnknownIsSkip()}} {
		if r := queueRun(t, tg, opts...); r.Verdict != verdict.Unknown {
			t.Errorf("options %v: BR-2.9 %s (%s), want unknown", opts, r.Verdict, r.Reason)
		}
	}
}

// TestSeed: BR-2.9 records the seed it ran with, the one given or, for 0,
// one it picked (a number that survives a JSON round trip).
func TestSeed(t *testing.T) {
	tg := embedded(t, nats.Client{})
	tg.Windows = kithooks.Windows{Messages: 30}
	tg.Seed = 42
	if v, _ := figure(queueRun(t, tg), "seed"); v != int64(42) {
		t.Errorf("seed figure %v (%T), want 42", v, v)
	}
	tg.Seed = 0
	v, _ := figure(queueRun(t, tg), "seed")
	if s, ok := v.(int64); !ok || s <= 0 || s >= 1<<53 {
		t.Errorf("picked seed %v (%T), want 0 < seed < 2^53", v, v)
	}
}
