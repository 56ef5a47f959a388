package nats_test

import (
	"context"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/mq"
)

// TestRoundTrip checks the adapter's plumbing (the rules live in the suite):
// publish with an id, a duplicate, fetch, ack, read back, restart.
func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	e, b := embeddedTopic(t, "rt")
	a1, err := b.Publish(ctx, "rt", mq.Message{ID: "m1", Payload: []byte("x")})
	if err != nil || a1.Duplicate {
		t.Fatalf("first publish: %+v %v", a1, err)
	}
	a2, err := b.Publish(ctx, "rt", mq.Message{ID: "m1", Payload: []byte("y")})
	if err != nil || !a2.Duplicate || a2.Position != a1.Position {
		t.Fatalf("duplicate publish: %+v %v", a2, err)
	}
	c, err := b.Consumer(ctx, "rt", mq.ConsumerConfig{Group: "g", AckWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := c.Fetch(ctx, 10, 500*time.Millisecond)
	if err != nil || len(ds) != 1 || ds[0].Message().ID != "m1" || ds[0].Attempt() != 1 {
		t.Fatalf("fetch: %d %v", len(ds), err)
	}
	if err := ds[0].Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	all, err := b.ReadAll(ctx, "rt")
	if err != nil || len(all) != 1 || string(all[0].Message.Payload) != "x" {
		t.Fatalf("read all after restart: %+v %v", all, err)
	}
	if _, err := nats.Connect(ctx, "nats://u:secret@127.0.0.1:1", nats.Options{Timeout: time.Second}); err == nil {
		t.Fatal("connect to a closed port succeeded")
	}
}

// TestProcess: a child nats-server comes back after SIGKILL with what it had
// acknowledged, and reports its sync setting.
func TestProcess(t *testing.T) {
	ctx := context.Background()
	bin, err := nats.Binary(ctx)
	if err != nil {
		t.Skipf("no nats-server binary: %v", err)
	}
	p, err := nats.StartProcess(ctx, bin, nats.Sync{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if s, err := p.Sync(ctx); err != nil || s.Always || s.Interval != 2*time.Minute {
		t.Fatalf("sync %+v %v", s, err)
	}
	b, err := nats.Connect(ctx, p.URL(), nats.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.CreateTopic(ctx, "k", mq.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Publish(ctx, "k", mq.Message{ID: "a", Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if err := p.Restart(ctx, true); err != nil {
		t.Fatal(err)
	}
	all, err := b.ReadAll(ctx, "k")
	if err != nil || len(all) != 1 {
		t.Fatalf("after SIGKILL: %+v %v", all, err)
	}
}

// embeddedTopic starts an embedded server, connects, and creates topic;
// everything stops when t ends.
func embeddedTopic(t *testing.T, topic string) (*nats.Embedded, mq.Broker) {
	t.Helper()
	ctx := context.Background()
	e, err := nats.StartEmbedded(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Stop() })
	b, err := nats.Connect(ctx, e.URL(), nats.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.CreateTopic(ctx, topic, mq.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	return e, b
}
