package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceproof/tck/adapters/broker/kafka"
	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/verdict"
)

// TestRunProfileKafka is issue 25's third Done-when line on kfake: the
// declared topic and group certify; each single change on the cluster of
// retention.ms, cleanup.policy and min.insync.replicas, of the
// undeclared retention.bytes and max.message.bytes (compared with Kafka's
// defaults), of the broker's transactional.id.expiration.ms and of the
// partition count fails BR-6.1 naming it; so does a group's committed offset
// past the log end or below its start (issue 38 item 4); one moved forward
// inside the log by hand (no leader epoch) is unknown, naming it, and one
// the group's consumer committed passes; what kfake does not serve
// (producer.id.expiration.ms) is a kit note, not a difference.
func TestRunProfileKafka(t *testing.T) {
	t.Parallel() // see parallelTests in bin_test.go
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
          partitions: 1
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
	if notes := strings.Join(r.Evidence.Notes, "\n"); strings.Contains(notes, "XAUTOCLAIM") || !strings.Contains(notes, "group orders/billing: committed p0 0 of [0, 0), lag 0") {
		t.Errorf("the Kafka group's notes: a Redis claim note, or no committed offsets:\n%s", notes)
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
		// Undeclared: compared with Kafka's defaults (issue 38 item 4).
		{"retention.bytes", "1024", "-1", "topic orders retention.bytes: declared -1, server 1024"},
		{"max.message.bytes", "512", "1048588", "topic orders max.message.bytes: declared 1048588, server 512"},
	} {
		alter(c.key, c.changed)
		code, r := run()
		if code != reports.ExitMustFailed || r.Verdict != verdict.Fail || !strings.Contains(r.Reason, c.want) {
			t.Errorf("%s changed on the cluster: exit %d, BR-6.1 %s (%s); want exit 1 naming %q", c.key, code, r.Verdict, r.Reason, c.want)
		}
		alter(c.key, c.back)
	}
	// A broker config the cluster serves, changed behind the profile.
	alterBroker := func(v string) {
		t.Helper()
		rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "transactional.id.expiration.ms", Value: ptr(v)}})
		if err == nil {
			for _, r := range rs {
				if r.Err != nil {
					err = r.Err
				}
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	alterBroker("60000")
	if code, r := run(); code != reports.ExitMustFailed || r.Verdict != verdict.Fail || !strings.Contains(r.Reason, "server transactional.id.expiration.ms: declared 604800000, server 60000") {
		t.Errorf("transactional.id.expiration.ms changed on the cluster: exit %d, BR-6.1 %s (%s)", code, r.Verdict, r.Reason)
	}
	alterBroker("604800000")
	// The group's committed offset moved behind the profile's back: past
	// the log end (set by hand beyond any record), and below the log start
	// (records deleted before the group read them) fail BR-6.1; moved
	// forward inside the log cannot be told from consumption: unknown when
	// no consumer committed it, else a note.
	commit := func(at int64) {
		t.Helper()
		o := kadm.Offsets{}
		o.Add(kadm.Offset{Topic: "orders", Partition: 0, At: at, LeaderEpoch: -1})
		if _, err := adm.CommitOffsets(ctx, "billing", o); err != nil {
			t.Fatal(err)
		}
	}
	commit(1000)
	if code, r := run(); code != reports.ExitMustFailed || r.Verdict != verdict.Fail || !strings.Contains(r.Reason, "group orders/billing: p0 committed 1000 > log end 0") {
		t.Errorf("committed past the log end: exit %d, BR-6.1 %s (%s)", code, r.Verdict, r.Reason)
	}
	for i := range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 2})
	if _, err := adm.DeleteRecords(ctx, del); err != nil {
		t.Fatal(err)
	}
	commit(0)
	if code, r := run(); code != reports.ExitMustFailed || r.Verdict != verdict.Fail || !strings.Contains(r.Reason, "group orders/billing: p0 committed 0 < log start 2 (offsets 0..1 deleted unread)") {
		t.Errorf("committed below the log start: exit %d, BR-6.1 %s (%s)", code, r.Verdict, r.Reason)
	}
	// Moved forward inside the log by hand (an admin commit, no leader
	// epoch, as kafka-consumer-groups --reset-offsets --to-latest): Kafka
	// keeps no record of what the group processed, so no fail; unknown,
	// naming the commit no consumer made.
	commit(3)
	if code, r := run(); code != reports.ExitInconclusive || r.Verdict != verdict.Unknown ||
		!strings.Contains(r.Reason, "group orders/billing: p0 committed 3 (offsets 2..2 before it) was committed without a leader epoch, so not by a consumer of the record before it") {
		t.Errorf("moved to the log end by hand: exit %d, BR-6.1 %s (%s)", code, r.Verdict, r.Reason)
	}
	// At the log start by hand: nothing before it to pass over.
	commit(2)
	if code, r := run(); code != reports.ExitConformant || r.Verdict != verdict.Pass {
		t.Errorf("committed at the log start: exit %d, BR-6.1 %s (%s)", code, r.Verdict, r.Reason)
	}
	// The group's own consumer reads the record at 2 and commits 3 with
	// its leader epoch: consumption, a pass naming what cannot be told.
	gc, err := kgo.NewClient(kgo.SeedBrokers(e.Seeds()...), kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	for n := 0; n < 1 && pctx.Err() == nil; {
		fs := gc.PollFetches(pctx)
		n += fs.NumRecords()
	}
	if err := gc.CommitUncommittedOffsets(pctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	gc.Close()
	if code, r := run(); code != reports.ExitConformant || r.Verdict != verdict.Pass || !strings.Contains(strings.Join(r.Evidence.Notes, "\n"), "committed p0 3 of [2, 3), lag 0: Kafka keeps no record of what a group read") {
		t.Errorf("committed at the log end by the group's consumer: exit %d, BR-6.1 %s (%s) %s", code, r.Verdict, r.Reason, r.Evidence.Notes)
	}
	// A partition added behind the profile (it cannot be taken back).
	if _, err := adm.CreatePartitions(ctx, 1, "orders"); err != nil {
		t.Fatal(err)
	}
	if code, r := run(); code != reports.ExitMustFailed || r.Verdict != verdict.Fail || !strings.Contains(r.Reason, "topic orders partitions: declared 1, server 2") {
		t.Errorf("a partition added on the cluster: exit %d, BR-6.1 %s (%s)", code, r.Verdict, r.Reason)
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
