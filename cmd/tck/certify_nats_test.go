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

// TestRunProfileWholeConfig is issue 25's first Done-when line: against a
// nats-server with the declared stream and consumer, each single change on
// the server of discard policy, filter subject, deliver policy and
// max_ack_pending fails BR-6.1 naming it; a profile whose retries outlast
// its window exits 1 under `tck run --profile` as under `tck plan`.
func TestRunProfileWholeConfig(t *testing.T) {
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
	base := jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Duplicates: 3 * time.Second, Storage: jetstream.FileStorage}
	baseC := jetstream.ConsumerConfig{Durable: "w", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 2 * time.Second, MaxDeliver: 4}
	configure := func(sc jetstream.StreamConfig, cc jetstream.ConsumerConfig) {
		t.Helper()
		_ = js.DeleteConsumer(ctx, "ORDERS", "w")
		if _, err := js.CreateOrUpdateStream(ctx, sc); err != nil {
			t.Fatal(err)
		}
		if _, err := js.CreateOrUpdateConsumer(ctx, "ORDERS", cc); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	prof := func(retry string) string {
		f := filepath.Join(dir, retry+".yaml")
		os.WriteFile(f, []byte(`schema: onceproof.profile/v1
name: whole-config
producers:
  - name: api
    broker: main
    stream: ORDERS
    subject: orders.created
    keepsMessageId: true
    retries: [`+retry+`]
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
		return f
	}
	run := func(file string) (int, *reports.Report) {
		t.Helper()
		out := t.TempDir()
		code, _, stderr := tck(t, "run", "--profile", file, "--target", "broker/nats="+p.URL(), "--rule", "BR-6.1", "--out", out, "--quiet")
		rep, err := reports.Read(filepath.Join(out, reports.FileJSON))
		if err != nil {
			t.Fatalf("exit %d, %s: %v", code, stderr, err)
		}
		return code, rep
	}
	br61 := func(rep *reports.Report) verdict.Result {
		for _, r := range rep.Results {
			if r.Rule == "BR-6.1" {
				return r
			}
		}
		t.Fatal("no BR-6.1")
		return verdict.Result{}
	}
	ok := prof("1s")
	configure(base, baseC)
	if code, rep := run(ok); code != reports.ExitConformant {
		t.Fatalf("as declared: exit %d, %s (%s)", code, rep.Summary.Conclusion, br61(rep).Reason)
	} else if notes := strings.Join(br61(rep).Evidence.Notes, "\n"); !strings.Contains(notes, "not declared; the server has") {
		t.Errorf("the undeclared settings are not listed: %s", notes)
	}
	for _, c := range []struct {
		name, want string
		change     func(*jetstream.StreamConfig, *jetstream.ConsumerConfig)
	}{
		{"discard", "discard: declared old, server new", func(s *jetstream.StreamConfig, _ *jetstream.ConsumerConfig) {
			s.Discard, s.MaxMsgs = jetstream.DiscardNew, 5
		}},
		{"filter", "filter_subjects: declared (none), server orders.other", func(_ *jetstream.StreamConfig, c *jetstream.ConsumerConfig) { c.FilterSubject = "orders.other" }},
		{"deliver", "deliver_policy: declared all, server new", func(_ *jetstream.StreamConfig, c *jetstream.ConsumerConfig) {
			c.DeliverPolicy = jetstream.DeliverNewPolicy
		}},
		{"max_ack_pending", "max_ack_pending: declared 1000, server 1", func(_ *jetstream.StreamConfig, c *jetstream.ConsumerConfig) { c.MaxAckPending = 1 }},
	} {
		sc, cc := base, baseC
		c.change(&sc, &cc)
		configure(sc, cc)
		code, rep := run(ok)
		if r := br61(rep); code != reports.ExitMustFailed || r.Verdict != verdict.Fail || !strings.Contains(r.Reason, c.want) {
			t.Errorf("%s changed on the server: exit %d, BR-6.1 %s (%s); want exit 1 naming %q", c.name, code, r.Verdict, r.Reason, c.want)
		}
	}
	configure(base, baseC)
	late := prof("4s")
	code, rep := run(late)
	if code != reports.ExitMustFailed || !strings.Contains(rep.Summary.Conclusion, "retry-past-window") || br61(rep).Verdict != verdict.Pass {
		t.Errorf("retries past the window: exit %d, %s", code, rep.Summary.Conclusion)
	}
	if code, _, _ := tck(t, "plan", "--profile", late); code != reports.ExitMustFailed {
		t.Errorf("tck plan on the same profile: exit %d, want 1", code)
	}
}
