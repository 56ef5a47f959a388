package nats_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/mq"
)

// TestInspect: the inspector reads back every setting the kit created a
// stream and consumer with, says not found for what is not there, reads
// the server's version, names what a client cannot read, and changes
// nothing.
func TestInspect(t *testing.T) {
	ctx := context.Background()
	e, err := nats.StartEmbedded(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	b, err := nats.Connect(ctx, e.URL(), nats.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	cfg := mq.TopicConfig{DedupeWindow: 7 * time.Second, Retention: mq.Interest, MaxAge: time.Hour, Storage: mq.MemoryStorage, Replicas: 1}
	if err := b.CreateTopic(ctx, "insp", cfg); err != nil {
		t.Fatal(err)
	}
	backoff := []time.Duration{2 * time.Second, 5 * time.Second}
	if _, err := b.Consumer(ctx, "insp", mq.ConsumerConfig{Group: "g1", AckWait: time.Second, MaxDeliver: 3, Backoff: backoff}); err != nil {
		t.Fatal(err)
	}
	in, err := nats.Inspect(ctx, e.URL(), nats.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	ti, err := in.Topic(ctx, "insp")
	if err != nil {
		t.Fatal(err)
	}
	if ti.Config != cfg || !reflect.DeepEqual(ti.Subjects, []string{nats.Subject("insp")}) {
		t.Errorf("topic read back %+v, created with %+v", ti, cfg)
	}
	ci, err := in.Consumer(ctx, "insp", "g1")
	if err != nil {
		t.Fatal(err)
	}
	// JetStream sets the ack wait to the first back-off step.
	if ci.AckPolicy != mq.AckExplicit || ci.Config.AckWait != backoff[0] || ci.Config.MaxDeliver != 3 || !reflect.DeepEqual(ci.Config.Backoff, backoff) {
		t.Errorf("consumer read back %+v", ci)
	}
	if _, err := in.Topic(ctx, "NOPE"); !errors.Is(err, mq.ErrNotFound) {
		t.Errorf("missing stream: %v", err)
	}
	if _, err := in.Consumer(ctx, "insp", "nope"); !errors.Is(err, mq.ErrNotFound) {
		t.Errorf("missing consumer: %v", err)
	}
	si, err := in.Server(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if si.Version != "nats-server "+nats.Version || !strings.HasPrefix(si.Settings["sync"], nats.NotReadable) {
		t.Errorf("server info %+v", si)
	}
	again, err := in.Topic(ctx, "insp")
	if err != nil || again.Config != cfg {
		t.Errorf("inspecting changed the stream: %+v %v", again, err)
	}
}

// TestInspectSystemAccount: a connection of the system account reads the
// server's sync and store settings through VARZ.
func TestInspectSystemAccount(t *testing.T) {
	sys, app := server.NewAccount("SYS"), server.NewAccount("APP")
	dir := t.TempDir()
	opts := &server.Options{
		Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: dir, SyncAlways: true,
		Accounts: []*server.Account{sys, app}, SystemAccount: "SYS",
		Users: []*server.User{{Username: "sys", Password: "s", Account: sys}, {Username: "app", Password: "a", Account: app}},
	}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(s.Shutdown)
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	url := "nats://sys:s@" + s.Addr().String()
	in, err := nats.Inspect(context.Background(), url, nats.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	si, err := in.Server(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(si.Settings["sync"], "always") || !strings.Contains(si.Settings["store dir"], dir) {
		t.Errorf("settings read as the system account: %+v", si.Settings)
	}
	// By the server's names, for BR-6.1 (the interval is the default).
	if si.Settings["sync_always"] != "true" || si.Settings["sync_interval"] != "2m0s" {
		t.Errorf("sync_always %q, sync_interval %q", si.Settings["sync_always"], si.Settings["sync_interval"])
	}
}
