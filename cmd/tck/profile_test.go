package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/verdict"
)

// TestRunProfileUsageErrors: a malformed profile, a profile with nothing
// to certify on a broker/nats target, and a negative --max-wait are usage
// errors: exit 3, one line, nothing written.
func TestRunProfileUsageErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("schema: onceproof.profile/v1\nname: x\nbrokers:\n  - name: main\n    kind: nats\n    streams:\n      - name: S\n        duplicates: 60\n"), 0o644)
	kafka := filepath.Join(dir, "kafka.yaml")
	os.WriteFile(kafka, []byte("schema: onceproof.profile/v1\nname: x\nbrokers:\n  - name: k\n    kind: kafka\n    streams:\n      - name: orders\n"), 0o644)
	out := filepath.Join(dir, "out")
	for _, args := range [][]string{
		{"run", "--profile", bad, "--suite", "broker", "--out", out},
		{"run", "--profile", kafka, "--suite", "broker", "--out", out},
		{"run", "--profile", filepath.Join(dir, "missing.yaml"), "--out", out},
		{"run", "--max-wait", "-1s", "--out", out},
	} {
		code, _, stderr := tck(t, args...)
		if code != reports.ExitUsage || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q; want exit 3 and one line", args, code, stderr)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a usage error wrote %s", out)
	}
}

// TestRunProfileCertifies is Done-when line 2 through the CLI at small
// durations: the run against a server configured as declared exits 0 with
// declared vs measured and the team's settings in the report; after the
// window is changed on the server the same run exits 1 on BR-6.1.
func TestRunProfileCertifies(t *testing.T) {
	t.Parallel() // see parallelTests in bin_test.go
	ctx := context.Background()
	bin, err := nats.Binary(ctx)
	if err != nil {
		t.Skipf("no nats-server binary: %v", err)
	}
	p, err := nats.StartProcess(ctx, bin, nats.Sync{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	nc, err := natsgo.Connect(p.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	sc := jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Duplicates: 3 * time.Second, Storage: jetstream.FileStorage}
	if _, err := js.CreateStream(ctx, sc); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "w", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 2 * time.Second, MaxDeliver: 4}); err != nil {
		t.Fatal(err)
	}
	prof := filepath.Join(t.TempDir(), "p.yaml")
	os.WriteFile(prof, []byte(`schema: onceproof.profile/v1
name: cli-certify
brokers:
  - name: main
    kind: nats
    streams:
      - name: ORDERS
        subjects: [orders.>]
        duplicates: 3s
        consumers:
          - name: w
            ackWait: 2s
            maxDeliver: 4
`), 0o644)
	run := func() (int, *reports.Report) {
		out := t.TempDir()
		code, _, stderr := tck(t, "run", "--profile", prof, "--target", "broker/nats="+p.URL(),
			"--rule", "BR-6.1", "--rule", "BR-1.2", "--rule", "BR-2.1", "--out", out, "--quiet")
		rep, err := reports.Read(filepath.Join(out, reports.FileJSON))
		if err != nil {
			t.Fatalf("exit %d, %s: %v", code, stderr, err)
		}
		return code, rep
	}
	result := func(rep *reports.Report, id string) verdict.Result {
		for _, r := range rep.Results {
			if r.Rule == id {
				return r
			}
		}
		t.Fatalf("no %s", id)
		return verdict.Result{}
	}
	code, rep := run()
	if code != reports.ExitConformant {
		t.Errorf("exit %d, want 0: %s", code, rep.Summary.Conclusion)
	}
	if rep.Plan == nil || rep.Plan.Profile != "cli-certify" {
		t.Errorf("the report has no plan of the profile: %+v", rep.Plan)
	}
	tg := rep.Targets[0]
	if !strings.Contains(tg.Config["stream ORDERS"], "duplicates 3s") || !strings.Contains(tg.Config["consumer ORDERS/w"], "ack wait 2s") {
		t.Errorf("the target's configuration is not the team's: %v", tg.Config)
	}
	if !strings.HasPrefix(tg.Server["version"], "nats-server ") || !strings.HasPrefix(tg.Server["sync"], nats.NotReadable) {
		t.Errorf("the server's settings as read: %v", tg.Server)
	}
	for _, id := range []string{"BR-6.1", "BR-1.2", "BR-2.1"} {
		r := result(rep, id)
		if r.Verdict != verdict.Pass || len(r.Evidence.Comparisons) == 0 {
			t.Errorf("%s: %s (%s), comparisons %+v", id, r.Verdict, r.Reason, r.Evidence.Comparisons)
		}
	}

	sc.Duplicates = 1500 * time.Millisecond
	if _, err := js.UpdateStream(ctx, sc); err != nil {
		t.Fatal(err)
	}
	code, rep = run()
	r := result(rep, "BR-6.1")
	if code != reports.ExitMustFailed || r.Verdict != verdict.Fail || !strings.Contains(r.Reason, "declared 3s, server 1.5s") {
		t.Errorf("after the window changed: exit %d, BR-6.1 %s (%s)", code, r.Verdict, r.Reason)
	}
}
