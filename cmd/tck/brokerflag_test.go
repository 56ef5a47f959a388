package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/reports"
)

// TestBrokerFlagBadInput: a --broker that names no broker target, a
// mutant, or a run without a consumer target is a usage error (exit 3, one
// line) and starts nothing.
func TestBrokerFlagBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"--suite", "consumer", "--broker", "broker/nosuch"},
		{"--suite", "consumer", "--broker", "eventstore/memory"},
		{"--suite", "consumer", "--broker", "broker/mutant-kafka-no-idempotence"},
		{"--suite", "eventstore", "--broker", "broker/kafka"},
		{"--suite", "consumer", "--broker", "broker/kafka=ftp-ish"},
		// A consumer service over RabbitMQ is not supported.
		{"--suite", "consumer", "--target", "consumer/process=cmd:true", "--broker", "broker/rabbitmq"},
		// A share group at an address: the kit sets the lock and the
		// delivery limit on its own kfake only.
		{"--suite", "consumer", "--target", "consumer/process=cmd:true", "--broker", "broker/kafka-share=kafka://127.0.0.1:1"},
		// Nor the kit's Python service, which speaks no share group.
		{"--suite", "consumer", "--target", "consumer/process-python", "--broker", "broker/kafka-share"},
	} {
		dir := filepath.Join(t.TempDir(), "out")
		code, _, stderr := tck(t, append([]string{"run", "--out", dir}, args...)...)
		if code != reports.ExitUsage || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("tck run %v: exit %d, stderr %q; want exit 3 and one line", args, code, stderr)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("tck run %v: a usage error wrote %s", args, dir)
		}
		if strings.Contains(strings.Join(args, " "), "process") && !strings.Contains(stderr, "broker/kafka-share") {
			t.Errorf("tck run %v: %q does not say which brokers a service takes", args, stderr)
		}
	}
}

// TestConsumerOverKafka: the consumer suite over broker/kafka passes what
// Kafka's model can provoke and is not-applicable, with Kafka's reason, on
// the rest; never a fail. The target is named after its broker.
func TestConsumerOverKafka(t *testing.T) {
	t.Parallel() // see parallelTests in bin_test.go
	if testing.Short() {
		t.Skip("a consumer run over kfake (about 5 s)")
	}
	dir := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := tck(t, "run", "--quiet", "--suite", "consumer", "--broker", "broker/kafka", "--out", dir)
	if code != reports.ExitConformant {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	rep, err := reports.Read(filepath.Join(dir, reports.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	pass, na := 0, 0
	for _, r := range rep.Results {
		if r.Target != "consumer/reference over broker/kafka" {
			t.Errorf("%s: target %q", r.Rule, r.Target)
		}
		switch r.Verdict {
		case "pass":
			pass++
		case "not-applicable":
			na++
			if !strings.Contains(r.Reason, "broker/kafka has no") {
				t.Errorf("%s: not-applicable without Kafka's reason: %s", r.Rule, r.Reason)
			}
		default:
			t.Errorf("%s: %s: %s", r.Rule, r.Verdict, r.Reason)
		}
	}
	if pass == 0 || na == 0 {
		t.Errorf("%d pass, %d not-applicable: want both", pass, na)
	}
}
