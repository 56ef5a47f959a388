package rabbitmq_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/broker/rabbitmq"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner/runnertest"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/broker"
)

// With no URL the kit starts a rabbitmq-server of its own: the broker
// suite passes on it (every rule that applies; BR-3.1 on a second server
// of the rule's own, restarted gracefully and with SIGKILL). That nothing
// of either server is left once it stops is checked by TestMain.
func TestLocalServerPassesBrokerSuite(t *testing.T) {
	t.Parallel() // each on a server of its own or the shared one, under a run of its own
	rt := rabbitmq.SharedLocal(t)
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
}

// A wrong password is one clear error that does not show it.
func TestWrongPasswordIsRedacted(t *testing.T) {
	t.Parallel() // each on a server of its own or the shared one, under a run of its own
	rt := rabbitmq.SharedLocal(t)
	i := strings.LastIndex(rt.URL, "@")
	bad := "amqp://tck:s3cret-pass-xyz" + rt.URL[i:]
	_, err := rabbitmq.Open(context.Background(), bad)
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
	t.Parallel() // each on a server of its own or the shared one, under a run of its own
	ctx := context.Background()
	rt := rabbitmq.SharedLocal(t)
	s, err := rt.Private(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Stop() }() // not left idle until the package ends (the shared server's Stop would end it)
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

// RunLocal calls of one process share one node: a second target is the
// same server under a run of its own, and its Stop leaves the node to the
// first (the last Stop ends it: TestMain checks nothing is left).
func TestRunLocalSharesOneNode(t *testing.T) {
	t.Parallel() // each on a server of its own or the shared one, under a run of its own
	ctx := context.Background()
	rt := rabbitmq.SharedLocal(t)
	second, err := rabbitmq.RunLocal(ctx, rabbitmq.WithAckWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if second.URL != rt.URL || second.Management != rt.Management {
		t.Errorf("a second RunLocal with the same consumer_timeout started another node (%s, not %s)", second.Address, rt.Address)
	}
	if second.Config["namePrefix"] == rt.Config["namePrefix"] {
		t.Errorf("two targets on one node share the name prefix %s", rt.Config["namePrefix"])
	}
	if err := second.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := rabbitmq.Probe(ctx, rt.URL, rabbitmq.NewRun(), nil); err != nil {
		t.Errorf("the node stopped with the second target's Stop, before the first's: %v", err)
	}
}
