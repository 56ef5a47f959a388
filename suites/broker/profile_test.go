package broker_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/verdict"
)

// The team's stream and consumer of the certification test, at small
// durations so the test is quick (the by-hand check in docs/profile.md
// uses 60 s / 20 s / 4).
const (
	teamStream   = "ORDERS"
	teamConsumer = "orders-worker"
	teamWindow   = 6 * time.Second
	teamAckWait  = 3 * time.Second
	teamMaxDeliv = 4
)

const teamProfile = `schema: onceproof.profile/v1
name: certify-test
producers:
  - name: orders-api
    broker: main
    stream: ORDERS
    keepsMessageId: true
    retries: [1s]
brokers:
  - name: main
    kind: nats
    streams:
      - name: ORDERS
        subjects: [orders.>]
        duplicates: %WINDOW%
        retention: limits
        storage: file
        replicas: 1
        consumers:
          - name: orders-worker
            ackPolicy: explicit
            ackWait: 3s
            maxDeliver: 4
`

// teamServer is a nats-server the test starts as a team would (a child
// process), with the team's stream and consumer on it.
func teamServer(t *testing.T) (url string, js jetstream.JetStream) {
	t.Helper()
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
	t.Cleanup(nc.Close)
	js, err = jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: teamStream, Subjects: []string{"orders.>"}, Duplicates: teamWindow,
		Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage, Replicas: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateOrUpdateConsumer(ctx, teamStream, jetstream.ConsumerConfig{Durable: teamConsumer, AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: teamAckWait, MaxDeliver: teamMaxDeliv}); err != nil {
		t.Fatal(err)
	}
	return p.URL(), js
}

// certified binds the broker suite to the team's server with the profile
// (window as declared), as `tck run --profile` does.
func certified(t *testing.T, url, window string) registry.BrokerBinding {
	t.Helper()
	file := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(teamProfile, "%WINDOW%", window)), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	d, err := registry.DeclaredNATS(p, true)
	if err != nil {
		t.Fatal(err)
	}
	nt, err := nats.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	tg := registry.BrokerTarget(nt)
	tg.Declared = d
	tg.Budget = registry.DefaultMaxWait
	return tg
}

// state is what the test compares before and after: the team's stream
// and consumer configurations, and the streams on the server.
type state struct {
	stream   jetstream.StreamConfig
	consumer jetstream.ConsumerConfig
	streams  []string
}

func readState(t *testing.T, js jetstream.JetStream) state {
	t.Helper()
	ctx := context.Background()
	s, err := js.Stream(ctx, teamStream)
	if err != nil {
		t.Fatal(err)
	}
	c, err := js.Consumer(ctx, teamStream, teamConsumer)
	if err != nil {
		t.Fatal(err)
	}
	st := state{stream: s.CachedInfo().Config, consumer: c.CachedInfo().Config}
	names := js.StreamNames(ctx)
	for n := range names.Name() {
		st.streams = append(st.streams, n)
	}
	return st
}

func comparison(r verdict.Result, setting string) (verdict.Comparison, bool) {
	for _, c := range r.Evidence.Comparisons {
		if c.Setting == setting {
			return c, true
		}
	}
	return verdict.Comparison{}, false
}

// TestCertifyTeamConfiguration is issue 11's certification at small
// durations: against a server configured as the profile declares, every
// rule passes, BR-1.2 and BR-2.1 measure the team's window and ack wait,
// BR-6.1 names no difference; after the window is changed on the server,
// BR-6.1 fails showing both values side by side. The team's stream and
// consumer are untouched by the kit, and no scratch stream is left.
func TestCertifyTeamConfiguration(t *testing.T) {
	url, js := teamServer(t)
	before := readState(t, js)

	res := register(certified(t, url, "6s"))
	for id, r := range res {
		if r.Verdict != verdict.Pass && r.Verdict != verdict.NotApplicable {
			t.Errorf("%s: %s (%s)", id, r.Verdict, r.Reason)
		}
	}
	if r := res["BR-6.1"]; r.Verdict == verdict.Pass {
		if n := len(r.Evidence.Comparisons); n < 9 {
			t.Errorf("BR-6.1 compared %d settings, want every declared one: %+v", n, r.Evidence.Comparisons)
		}
		for _, c := range r.Evidence.Comparisons {
			if !c.Match || c.Source != "server" {
				t.Errorf("BR-6.1 comparison %+v", c)
			}
		}
	}
	// The declared producer keeps its ids: BR-1.6's fresh-id copy is the
	// kit's demonstration, not the team's hazard.
	if r := res["BR-1.6"]; len(r.Evidence.Hazards) != 0 {
		t.Errorf("BR-1.6 names a hazard though every declared producer keeps its id: %v", r.Evidence.Hazards)
	}
	c, ok := comparison(res["BR-1.2"], "de-dupe window")
	if !ok || !c.Match || c.Declared != "6s" || c.Source != "measured" {
		t.Errorf("BR-1.2 declared vs measured: %+v (found %v)", c, ok)
	}
	if w, _ := figure(res["BR-1.2"], "measured window"); w == nil || w.(float64) < 5.7 || w.(float64) > 6.3 {
		t.Errorf("BR-1.2 measured window %v, want the team's 6s", w)
	}
	c, ok = comparison(res["BR-2.1"], "ack wait (first redelivery)")
	if !ok || !c.Match || c.Declared != "3s" {
		t.Errorf("BR-2.1 declared vs measured: %+v (found %v)", c, ok)
	}
	if c, _ := comparison(res["BR-2.6"], "max deliver"); c.Declared != "4" || !c.Match {
		t.Errorf("BR-2.6 tested max deliver %+v, want the team's %d", c, teamMaxDeliv)
	}

	// The team changes the window on the server; the profile still says 6s.
	s, err := js.Stream(context.Background(), teamStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.Duplicates = 3 * time.Second
	if _, err := js.UpdateStream(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	updated := readState(t, js)

	changed := register(certified(t, url, "6s"), "BR-6.1", "BR-1.2")
	// The scratch topic gets the server's window: BR-1.2 measures the real
	// 3s and fails it against the declared 6s.
	m := changed["BR-1.2"]
	if m.Verdict != verdict.Fail {
		t.Errorf("BR-1.2 after the window changed on the server: %s (%s), want fail", m.Verdict, m.Reason)
	}
	if w, _ := figure(m, "measured window"); w == nil || w.(float64) < 2.7 || w.(float64) > 3.3 {
		t.Errorf("BR-1.2 measured window %v after the change, want the server's 3s", w)
	}
	if c, ok := comparison(m, "de-dupe window"); !ok || c.Match || c.Declared != "6s" || c.Source != "measured" {
		t.Errorf("BR-1.2 declared vs measured after the change: %+v (found %v)", c, ok)
	}
	r := changed["BR-6.1"]
	if r.Verdict != verdict.Fail {
		t.Fatalf("BR-6.1 after the window changed on the server: %s (%s)", r.Verdict, r.Reason)
	}
	c, _ = comparison(r, "stream ORDERS duplicates (de-dupe window)")
	if c.Declared != "6s" || c.Actual != "3s" || c.Match {
		t.Errorf("BR-6.1 side by side: %+v", c)
	}
	if !strings.Contains(r.Reason, "declared 6s, server 3s") {
		t.Errorf("BR-6.1 reason does not name the difference: %s", r.Reason)
	}

	after := readState(t, js)
	if !reflect.DeepEqual(after.stream, updated.stream) || !reflect.DeepEqual(after.consumer, before.consumer) {
		t.Errorf("the team's stream or consumer changed:\nstream   %+v\nwant     %+v\nconsumer %+v\nwant     %+v", after.stream, updated.stream, after.consumer, before.consumer)
	}
	if !reflect.DeepEqual(before.stream.Name, after.stream.Name) || len(after.streams) != 1 || after.streams[0] != teamStream {
		t.Errorf("streams on the server afterwards: %v, want only %s", after.streams, teamStream)
	}
}

// TestCertifyTooLongIsUnknown: a declared window longer than the run's
// limit makes the window rules unknown, naming the wait and the limit;
// they are never shortened or passed.
func TestCertifyTooLongIsUnknown(t *testing.T) {
	url, _ := teamServer(t)
	tg := certified(t, url, "20m")
	res := register(tg, "BR-1.2", "BR-1.3", "BR-1.4", "BR-6.1")
	for _, id := range []string{"BR-1.2", "BR-1.3", "BR-1.4"} {
		r := res[id]
		if r.Verdict != verdict.Unknown || !strings.Contains(r.Reason, "de-dupe window 20m0s") || !strings.Contains(r.Reason, "10m0s") {
			t.Errorf("%s with a 20m window and a 10m limit: %s (%s)", id, r.Verdict, r.Reason)
		}
	}
	// The server holds 6s: the declaration's 20m is a difference.
	if r := res["BR-6.1"]; r.Verdict != verdict.Fail {
		t.Errorf("BR-6.1: %s (%s)", r.Verdict, r.Reason)
	}
}

// TestCertifyMissingStream: a declared stream the server does not have is
// a difference, not an error of the kit.
func TestCertifyMissingStream(t *testing.T) {
	nt, err := nats.RunEmbedded(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nt.Stop() })
	tg := certified(t, nt.URL, "6s")
	r := register(tg, "BR-6.1")["BR-6.1"]
	c, _ := comparison(r, "stream ORDERS")
	if r.Verdict != verdict.Fail || c.Actual != "not found" {
		t.Errorf("BR-6.1 on a server without the stream: %s (%s), %+v", r.Verdict, r.Reason, c)
	}
}

// TestShortMaxAgeNoWindow is issue 22's embedded run at small durations: a
// stream with maxAge 7s and no duplicates window has, on the server, the
// window min(2m, maxAge) = 7s. The kit's scratch copy gets that window and
// the declared maxAge (BR-6.1 passes, it is not refused as a 2m window
// would be), BR-1.2 measures 7s, and BR-2.8, judged after BR-1.2's wait
// (past the 7 s age), still finds its limits message: the timed rules'
// topics do not take an age that would expire their messages first.
func TestShortMaxAgeNoWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("waits about 8 s")
	}
	nt, err := nats.RunEmbedded(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nt.Stop() })
	file := filepath.Join(t.TempDir(), "p.yaml")
	yaml := "schema: onceproof.profile/v1\nname: short\nbrokers:\n  - name: main\n    kind: nats\n    streams:\n      - {name: ORDERS, subjects: [orders.>], maxAge: 7s, consumers: [{name: w, ackWait: 1s, maxDeliver: 3}]}\n"
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	d, err := registry.DeclaredNATS(p, false)
	if err != nil {
		t.Fatal(err)
	}
	tg := registry.BrokerTarget(nt)
	tg.Declared = d
	tg.Budget = registry.DefaultMaxWait
	res := register(tg, "BR-1.2", "BR-2.8", "BR-6.1")
	for _, id := range []string{"BR-1.2", "BR-2.8", "BR-6.1"} {
		if r := res[id]; r.Verdict != verdict.Pass {
			t.Errorf("%s: %s (%s)", id, r.Verdict, r.Reason)
		}
	}
	for _, c := range res["BR-6.1"].Evidence.Comparisons {
		if strings.HasSuffix(c.Setting, "duplicates (de-dupe window)") && (c.Declared != "7s" || c.Actual != "7s") {
			t.Errorf("BR-6.1 window: %+v, want 7s on both sides", c)
		}
		if strings.HasSuffix(c.Setting, "max age") && (c.Declared != "7s" || c.Actual != "7s") {
			t.Errorf("BR-6.1 max age: %+v, want 7s on both sides", c)
		}
	}
}
