package registry

import (
	"context"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// runConsumerOverShare runs the given CO rules of consumer/NAME over
// broker/kafka-share (embedded kfake) and returns their results.
func runConsumerOverShare(t *testing.T, name string, rules ...string) (map[string]verdict.Result, target.Info) {
	t.Helper()
	k, ref, err := Targets().Resolve(target.Ref{Suite: "consumer", Name: name})
	if err != nil {
		t.Fatal(err)
	}
	ref.Opts = target.Options{Broker: "broker/kafka-share", Seed: 7}
	st, err := k.Start(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := st.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	got := map[string]verdict.Result{}
	for _, r := range runner.Run(ref.String(), st.Register, runner.Options{Rules: rules}) {
		got[r.Rule] = r
	}
	return got, st.Info
}

// TestConsumerOverShareGroup: over a share group the rules that need an ack
// wait (CO-2.2: the lock) and a nak (CO-1.2's crash and redelivery, a
// RELEASE held for the delay) are applicable: the reference consumer passes
// them, the ack-first consumer fails CO-2.2 and the message-id-only one
// CO-1.2, as on NATS. The report says the lock is the ack wait.
func TestConsumerOverShareGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("consumer runs over kfake share groups (about 10 s)")
	}
	rules := []string{"CO-1.2", "CO-2.2", "CO-2.4"}
	ref, info := runConsumerOverShare(t, "reference", rules...)
	for _, id := range rules {
		if r := ref[id]; r.Verdict != verdict.Pass {
			t.Errorf("reference %s: %s: %s", id, r.Verdict, r.Reason)
		}
	}
	if !strings.Contains(info.Config["ackWait"], "group.share.record.lock.duration.ms") || !strings.Contains(info.Config["nak"], "RELEASE") {
		t.Errorf("the report does not say how the share group stands in: ackWait %q, nak %q", info.Config["ackWait"], info.Config["nak"])
	}
	for _, m := range []struct{ name, rule string }{{"mutant-ack-first", "CO-2.2"}, {"mutant-dedupe-message-id", "CO-1.2"}} {
		got, _ := runConsumerOverShare(t, m.name, m.rule)
		if r := got[m.rule]; r.Verdict != verdict.Fail {
			t.Errorf("%s %s: %s (%s); want fail", m.name, m.rule, r.Verdict, r.Reason)
		}
	}
}
