package sinks

import (
	"context"
	"sync"
	"time"
)

// Notification is one visible notification about a message version.
type Notification struct {
	MessageID string `json:"messageId"`
	Version   int    `json:"version"`
	Text      string `json:"text"`
}

// Notifier stands for a push service that has no idempotency key: every
// Send is one more notification a user sees (seed 002, 四: 重复发送可能造成两个
// 可见通知). What it does offer is a query by key, so a consumer that lost
// track of a send (it crashed after it) can find out.
type Notifier interface {
	Send(ctx context.Context, n Notification) error
	// Sent counts the notifications sent so far for (messageID, version).
	Sent(ctx context.Context, messageID string, version int) (int, error)
}

// MemNotifier is the kit's notifier. Latency is how long a send takes, as a
// call to a real push service would; it is what makes a check-then-send race
// between two workers visible, as it would be in production.
type MemNotifier struct {
	clock   Clock
	Latency time.Duration
	mu      sync.Mutex
	log     []Effect
}

// NewNotifier returns a notifier with the given per-send latency.
func NewNotifier(clock Clock, latency time.Duration) *MemNotifier {
	return &MemNotifier{clock: clock, Latency: latency}
}

// Send implements Notifier. The notification becomes visible when the call
// returns; a send cut short by ctx did not happen.
func (n *MemNotifier) Send(ctx context.Context, msg Notification) error {
	if n.Latency > 0 {
		t := time.NewTimer(n.Latency)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.log = append(n.log, Effect{Scope: ScopeNotify, MessageID: msg.MessageID, Version: msg.Version, Body: msg.Text, At: n.clock.Now()})
	return nil
}

// Sent implements Notifier.
func (n *MemNotifier) Sent(ctx context.Context, messageID string, version int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, e := range n.log {
		if e.MessageID == messageID && e.Version == version {
			c++
		}
	}
	return c, nil
}

// Effects returns a copy of every notification sent.
func (n *MemNotifier) Effects() []Effect {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Effect(nil), n.log...)
}
