package nats_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/mq"
)

// TestSettleWithoutDeadline: Ack, Nak, Term and InProgress work with a
// context that has no deadline (context.Background, a cancel-only one): the
// adapter supplies SettleTimeout. The nak takes effect (the message comes
// back), the term too (it does not).
func TestSettleWithoutDeadline(t *testing.T) {
	ctx := context.Background()
	_, b := embeddedTopic(t, "settle")
	for _, id := range []string{"nak", "term", "ack"} {
		if _, err := b.Publish(ctx, "settle", mq.Message{ID: id, Payload: []byte(id)}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := b.Consumer(ctx, "settle", mq.ConsumerConfig{Group: "g", AckWait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	noDeadline, cancel := context.WithCancel(ctx)
	defer cancel()
	ds, err := c.Fetch(ctx, 3, time.Second)
	if err != nil || len(ds) != 3 {
		t.Fatalf("fetch: %d %v", len(ds), err)
	}
	for _, d := range ds {
		var err error
		switch d.Message().ID {
		case "nak":
			if err = d.InProgress(noDeadline); err == nil {
				err = d.Nak(noDeadline, 0)
			}
		case "term":
			err = d.Term(context.Background())
		case "ack":
			err = d.Ack(noDeadline)
		}
		if err != nil {
			t.Errorf("%s with a context without deadline: %v", d.Message().ID, err)
		}
	}
	again, err := c.Fetch(ctx, 3, time.Second)
	if err != nil || len(again) != 1 || again[0].Message().ID != "nak" || again[0].Attempt() != 2 {
		t.Fatalf("after nak/term/ack: want only the nak'd message back (attempt 2), got %d %v", len(again), err)
	}
}

// TestProcessNeverListens: a "server" that runs but never listens is not
// ready; the start fails within the readiness wait, names the server and
// the last error, and leaves neither the process nor its directory.
func TestProcessNeverListens(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "nats-server")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := nats.StartProcess(ctx, fake, nats.Sync{})
	if err == nil {
		t.Fatal("a server that never listens was reported ready")
	}
	if msg := err.Error(); !strings.Contains(msg, "not ready") || !strings.Contains(msg, "connect") {
		t.Errorf("error %q should say the server was not ready and why (the connect error)", msg)
	}
	// Whatever the start created is still tracked until it was removed.
	for _, p := range leftovers.Pending() {
		if strings.Contains(p, "nats-server child") || strings.Contains(p, "onceproof-nats-proc-") {
			t.Errorf("left behind: %s", p)
		}
	}
}

// TestProcessExitsAtStart: a binary that exits at once fails the start at
// once, saying so.
func TestProcessExitsAtStart(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "nats-server")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho no >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	_, err := nats.StartProcess(context.Background(), fake, nats.Sync{})
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") {
		t.Fatalf("want an 'exited before it was ready' error, got %v", err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("took %s to notice the exit", d)
	}
}
