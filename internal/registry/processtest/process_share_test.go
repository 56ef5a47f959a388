package processtest

import (
	"testing"

	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner/runnertest"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// Issue 39: the Go reference service over a Kafka share group
// (--broker broker/kafka-share, the embedded kfake) passes the rules that
// need an ack wait (the lock: a lost ACCEPT is redelivered), a nak (a held
// RELEASE) and crashes; the ack-first mutant fails CO-2.2 there and the
// message-id-only one CO-1.2, as over NATS.
func TestServiceOverKafkaShare(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: runs a consumer service over kfake's share groups")
	}
	t.Parallel() // TestMain: the repository's root, a TMPDIR of the package's own
	rules := []string{"CO-1.1", "CO-1.2", "CO-2.1", "CO-2.2", "CO-2.4"}
	run := func(t *testing.T, name, addr string, rules ...string) map[string]verdict.Verdict {
		got, sum := runnertest.Table(runnertest.Target(t, registry.Targets(), target.Ref{Suite: "consumer", Name: name, Address: addr},
			func(ref *target.Ref) { ref.Opts.Broker = "broker/kafka-share" }, rules...))
		t.Log(sum)
		return got
	}
	together(t, func(t *testing.T) {
		t.Run("reference", func(t *testing.T) {
			t.Parallel()
			got := run(t, "process", "cmd:go run ./examples/consumer-service/go", rules...)
			for _, id := range rules {
				for n := 1; got[id] == verdict.Unknown && n < runnertest.Runs; n++ {
					got[id] = run(t, "process", "cmd:go run ./examples/consumer-service/go", id)[id]
				}
				if got[id] != verdict.Pass {
					t.Errorf("Go reference over a share group: %s is %s, want pass", id, got[id])
				}
			}
		})
		for m, id := range map[string]string{"mutant-process-go-ack-first": "CO-2.2", "mutant-process-go-dedupe-by-message": "CO-1.2"} {
			t.Run(m, func(t *testing.T) {
				t.Parallel()
				if v := run(t, m, "", id)[id]; v != verdict.Fail {
					t.Errorf("%s over a share group: %s is %s, want fail", m, id, v)
				}
			})
		}
	})
}
