package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/verdict"
)

// TestCertifyNATSSync is issue 38 item 3 on NATS: against an embedded
// nats-server running sync_interval 1s, BR-6.1 reads the sync settings
// from the monitoring endpoint the profile names. A profile declaring the
// same setting passes; one declaring the default 2m, or sync_always,
// fails naming the setting with both values; a profile that gives no
// monitoring URL leaves BR-6.1 unknown naming sync_interval (a client is
// not told it).
func TestCertifyNATSSync(t *testing.T) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, HTTPHost: "127.0.0.1", HTTPPort: -1,
		JetStream: true, StoreDir: t.TempDir(), SyncInterval: time.Second, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	ctx := context.Background()
	nc, err := natsgo.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	mon := "http://" + s.MonitorAddr().String()
	dir := t.TempDir()
	run := func(name, nats string) verdict.Result {
		t.Helper()
		f := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(f, []byte(`schema: onceproof.profile/v1
name: durability
brokers:
  - name: main
    kind: nats
    durability: {survivePowerLoss: true}
`+nats+`    streams:
      - name: ORDERS
        subjects: [orders.>]
`), 0o644); err != nil {
			t.Fatal(err)
		}
		out := t.TempDir()
		code, _, stderr := tck(t, "run", "--profile", f, "--target", "broker/nats="+s.ClientURL(), "--rule", "BR-6.1", "--out", out, "--quiet")
		rep, err := reports.Read(filepath.Join(out, reports.FileJSON))
		if err != nil {
			t.Fatalf("%s: exit %d, %s: %v", name, code, stderr, err)
		}
		// A monitoring URL's password is in no output.
		raw, _ := os.ReadFile(filepath.Join(out, reports.FileJSON))
		if strings.Contains(string(raw)+stderr, "s3cret") {
			t.Errorf("%s: the monitoring URL's password is in the report", name)
		}
		for _, r := range rep.Results {
			if r.Rule == "BR-6.1" {
				return r
			}
		}
		t.Fatalf("%s: no BR-6.1", name)
		return verdict.Result{}
	}
	compared := func(r verdict.Result, setting string) *verdict.Comparison {
		for i, c := range r.Evidence.Comparisons {
			if c.Setting == setting {
				return &r.Evidence.Comparisons[i]
			}
		}
		return nil
	}

	r := run("matching", fmt.Sprintf("    nats: {syncInterval: 1s, monitoringUrl: %q}\n", mon))
	if c := compared(r, "server sync_interval"); r.Verdict != verdict.Pass || c == nil || !c.Match || c.Actual != "1s" {
		t.Errorf("sync_interval as declared: BR-6.1 %s (%s), comparison %+v", r.Verdict, r.Reason, c)
	}
	r = run("default", fmt.Sprintf("    nats: {monitoringUrl: %q}\n", mon))
	if r.Verdict != verdict.Fail || !strings.Contains(r.Reason, "server sync_interval: declared 2m0s, server 1s") {
		t.Errorf("the default 2m declared, 1s on the server: BR-6.1 %s (%s)", r.Verdict, r.Reason)
	}
	r = run("always", fmt.Sprintf("    nats: {syncAlways: true, monitoringUrl: %q}\n", mon))
	if r.Verdict != verdict.Fail || !strings.Contains(r.Reason, "server sync_always: declared true, server false") {
		t.Errorf("sync_always declared, not on the server: BR-6.1 %s (%s)", r.Verdict, r.Reason)
	}
	r = run("unseen", "    nats: {syncInterval: 1s}\n")
	if r.Verdict != verdict.Unknown || !strings.Contains(r.Reason, "sync_interval") || !strings.Contains(r.Reason, "monitoringUrl") {
		t.Errorf("no monitoring URL: BR-6.1 %s (%s), want unknown naming sync_interval", r.Verdict, r.Reason)
	}
	r = run("down", "    nats: {syncInterval: 1s, monitoringUrl: \"http://u:s3cret@127.0.0.1:1\"}\n")
	if r.Verdict != verdict.Unknown || !strings.Contains(r.Reason, "sync_interval") || !strings.Contains(r.Reason, "http://u:xxxxx@127.0.0.1:1/varz") || strings.Contains(fmt.Sprint(r), "s3cret") {
		t.Errorf("a monitoring endpoint that does not answer: BR-6.1 %s (%s), want unknown without the password", r.Verdict, r.Reason)
	}
}
