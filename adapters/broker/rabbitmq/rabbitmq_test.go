package rabbitmq_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/broker/rabbitmq"
	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner/runnertest"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/broker"
)

// needServer skips, saying why, when no rabbitmq-server is on PATH; with
// TCK_REQUIRE_RABBITMQ=1 (CI) it fails instead.
func needServer(t *testing.T) {
	t.Helper()
	if rabbitmq.HaveServerBinary() {
		return
	}
	if os.Getenv("TCK_REQUIRE_RABBITMQ") == "1" {
		t.Fatalf("TCK_REQUIRE_RABBITMQ=1 but %s (and epmd) is not on PATH (Debian: apt-get install rabbitmq-server)", rabbitmq.ServerBinary)
	}
	t.Skipf("%s is not on PATH (Debian: apt-get install rabbitmq-server)", rabbitmq.ServerBinary)
}

// noLeftovers checks that nothing of the kit's RabbitMQ servers is left:
// no process, no folder.
func noLeftovers(t *testing.T) {
	t.Helper()
	for _, left := range leftovers.Pending() {
		if strings.Contains(left, "rabbitmq") || strings.Contains(left, "epmd") {
			t.Errorf("left behind: %s", left)
		}
	}
}

// With no URL the kit starts a rabbitmq-server of its own: the broker
// suite passes on it (every rule that applies; BR-3.1 on a second server
// of the rule's own, restarted gracefully and with SIGKILL), and nothing
// of either server is left afterwards.
func TestLocalServerPassesBrokerSuite(t *testing.T) {
	needServer(t)
	rt, err := rabbitmq.RunLocal(context.Background(), rabbitmq.WithAckWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if rt.Private == nil {
		t.Fatal("a local server declares no restartable server of a rule's own")
	}
	if strings.Contains(rt.Address, "tck:") {
		t.Errorf("the address shows the credentials: %s", rt.Address)
	}
	tg := registry.RabbitBrokerTarget(rt)
	// As tck run runs it, an undecided rule once more (a loaded host can
	// take longer than BR-3.1's deadline to restart a rule's own server).
	runnertest.Passes(t, "broker/rabbitmq", func() { broker.Register(tg.Target, tg.Hooks()) })
	if err := rt.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	noLeftovers(t)
}

// A wrong password is one clear error that does not show it.
func TestWrongPasswordIsRedacted(t *testing.T) {
	needServer(t)
	rt, err := rabbitmq.RunLocal(context.Background(), rabbitmq.WithAckWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = rt.Stop()
		noLeftovers(t)
	}()
	i := strings.LastIndex(rt.URL, "@")
	bad := "amqp://tck:s3cret-pass-xyz" + rt.URL[i:]
	_, err = rabbitmq.Open(context.Background(), bad)
	if err == nil {
		t.Fatal("a wrong password was accepted")
	}
	if strings.Contains(err.Error(), "s3cret-pass-xyz") || strings.Contains(err.Error(), "\n") {
		t.Errorf("error shows the password or is not one line: %q", err)
	}
	// The kit's own server over its URL: the probe passes, and the target
	// says the kit cannot restart it or set its consumer_timeout.
	ut, err := rabbitmq.Open(context.Background(), rt.URL)
	if err != nil {
		t.Fatal(err)
	}
	if ut.Caps.AckWait || ut.Lacks["ack-wait"] == "" || ut.Private != nil {
		t.Errorf("a server at a URL declares ack wait %v (lacks %q), restartable %v", ut.Caps.AckWait, ut.Lacks["ack-wait"], ut.Private != nil)
	}
}

// What the publisher confirm said is what the log holds after a graceful
// and an abrupt restart of a server of the kit's own.
func TestConfirmedSurvivesRestart(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	rt, err := rabbitmq.RunLocal(ctx, rabbitmq.WithAckWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = rt.Stop()
		noLeftovers(t)
	}()
	s, err := rt.Private(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.CreateTopic(ctx, "t", mq.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, abrupt := range []bool{false, true} {
		for i := range 10 {
			if _, err := b.Publish(ctx, "t", mq.Message{ID: fmt.Sprintf("m-%v-%d", abrupt, i), Payload: []byte("x")}); err != nil {
				t.Fatal(err)
			}
			want++
		}
		if err := s.Restart(ctx, abrupt); err != nil {
			t.Fatalf("restart (abrupt %v): %v", abrupt, err)
		}
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		all, err := b.ReadAll(rctx, "t")
		cancel()
		if err != nil {
			t.Fatalf("read after restart (abrupt %v): %v\n%s", abrupt, err, s.Tail(6000))
		}
		if len(all) != want {
			t.Errorf("after a restart (abrupt %v) the log holds %d of %d confirmed publishes", abrupt, len(all), want)
		}
	}
}
