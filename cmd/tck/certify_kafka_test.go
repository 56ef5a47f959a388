package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceproof/tck/adapters/broker/kafka"
	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/verdict"
)

// TestRunProfileKafka is issue 25's third Done-when line on kfake: the
// declared topic and group certify; each single change on the cluster of
// retention.ms, cleanup.policy and min.insync.replicas fails BR-6.1
// naming it; what kfake does not serve (producer.id.expiration.ms) is a
// kit note, not a difference.
func TestRunProfileKafka(t *testing.T) {
	ctx := context.Background()
	e, err := kafka.StartEmbedded(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.Seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ptr := func(s string) *string { return &s }
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": ptr("86400000"), "cleanup.policy": ptr("delete")}, "orders"); err != nil {
		t.Fatal(err)
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 0, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "billing", offs); err != nil {
		t.Fatal(err)
	}
	prof := filepath.Join(t.TempDir(), "kafka.yaml")
	writeFile(t, prof, `schema: onceproof.profile/v1
name: kafka-certify
brokers:
  - name: events
    kind: kafka
    streams:
      - name: orders
        maxAge: 24h
        replicas: 1
        kafka:
          cleanupPolicy: delete
          minInsyncReplicas: 1
        consumers:
          - name: billing
`)
	run := func(all ...bool) (int, verdict.Result) {
		t.Helper()
		out := t.TempDir()
		args := []string{"run", "--profile", prof, "--target", "broker/kafka=kafka://" + e.Seeds()[0], "--out", out, "--quiet"}
		if len(all) == 0 {
			args = append(args, "--rule", "BR-6.1")
		}
		code, _, stderr := tck(t, args...)
		rep, err := reports.Read(filepath.Join(out, reports.FileJSON))
		if err != nil {
			t.Fatalf("exit %d, %s: %v", code, stderr, err)
		}
		for _, r := range rep.Results {
			if r.Rule == "BR-6.1" {
				return code, r
			}
		}
		t.Fatal("no BR-6.1")
		return 0, verdict.Result{}
	}
	code, r := run(true) // every rule, at the declared settings
	if code != reports.ExitConformant || r.Verdict != verdict.Pass {
		t.Fatalf("as declared: exit %d, BR-6.1 %s (%s)", code, r.Verdict, r.Reason)
	}
	if notes := strings.Join(r.Evidence.Notes, "\n"); !strings.Contains(notes, "producer.id.expiration.ms: declared 86400000; not served") {
		t.Errorf("what kfake does not serve is not a kit note: %s", notes)
	}
	alter := func(k, v string) {
		t.Helper()
		if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: k, Value: ptr(v)}}, "orders"); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ key, changed, back, want string }{
		{"retention.ms", "3600000", "86400000", "topic orders retention.ms: declared 86400000, server 3600000"},
		{"cleanup.policy", "compact", "delete", "topic orders cleanup.policy: declared delete, server compact"},
		{"min.insync.replicas", "2", "1", "topic orders min.insync.replicas: declared 1, server 2"},
	} {
		alter(c.key, c.changed)
		code, r := run()
		if code != reports.ExitMustFailed || r.Verdict != verdict.Fail || !strings.Contains(r.Reason, c.want) {
			t.Errorf("%s changed on the cluster: exit %d, BR-6.1 %s (%s); want exit 1 naming %q", c.key, code, r.Verdict, r.Reason, c.want)
		}
		alter(c.key, c.back)
	}
	if _, err := adm.DeleteGroup(ctx, "billing"); err != nil {
		t.Fatal(err)
	}
	if code, r := run(); code != reports.ExitMustFailed || !strings.Contains(r.Reason, "group orders/billing: declared present, server not found") {
		t.Errorf("the group gone: exit %d, BR-6.1 %s (%s)", code, r.Verdict, r.Reason)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
