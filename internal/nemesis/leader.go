package nemesis

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/onceproof/tck/internal/containers"
)

// Lookup asks the system under fault who leads a replicated resource now
// ("" or an error while it has no leader). Each backend supplies its own
// (the NATS adapter asks JetStream for a stream's leader).
type Lookup func(ctx context.Context) (string, error)

// Leaders tracks who leads one replicated resource across a fault, and notes
// every change on the timeline (actor "observer", action "leader"): "n2 ->
// none" when the leader is lost, "n2 -> n3" when another is elected.
type Leaders struct {
	lookup Lookup
	key    string // the resource, for the timeline
	log    Log

	mu      sync.Mutex
	current string // "" while the resource has no leader
	known   string // the last leader seen
	changes int
	history []string // every leader seen, in order
	// electedAt is when a leader other than the previous one was first seen.
	electedAt time.Time
}

// Track returns a tracker of key's leader asking lookup, noting on log
// (which may be nil).
func Track(key string, lookup Lookup, log Log) *Leaders {
	return &Leaders{lookup: lookup, key: key, log: log}
}

func (l *Leaders) note(result string) {
	if l.log != nil {
		l.log.Note("observer", "leader", l.key, result)
	}
}

// Leader asks who leads now (each question bounded by a second) and notes a
// change.
func (l *Leaders) Leader(ctx context.Context) (string, error) {
	actx, cancel := context.WithTimeout(ctx, time.Second)
	lead, err := l.lookup(actx)
	cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil || lead == "" {
		if err == nil {
			err = fmt.Errorf("%s has no leader now", l.key)
		}
		// While the leader is gone nobody can say who leads. A leader seen
		// before and lost now is a change on the timeline.
		if l.current != "" {
			l.note(fmt.Sprintf("%s -> none (%v)", l.current, err))
			l.current = ""
		}
		return "", err
	}
	if lead != l.current {
		was := l.known
		if was == "" {
			was = "none"
		} else if lead != l.known {
			l.changes++
			l.electedAt = time.Now()
		}
		if lead != l.known {
			l.history = append(l.history, lead)
		}
		if lead == l.known {
			// A question went unanswered, then the same leader answered.
			was = "none"
		}
		l.note(fmt.Sprintf("%s -> %s", was, lead))
		l.current, l.known = lead, lead
	}
	return lead, nil
}

// Changes counts the leader changes seen after the first leader: a leader
// lost and the same one back is none; n2 -> none -> n3 is one.
func (l *Leaders) Changes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changes
}

// History is every distinct leader seen, in order.
func (l *Leaders) History() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.history...)
}

// Known is the last leader seen ("" if none yet).
func (l *Leaders) Known() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.known
}

// ElectedAt is when the last change was seen (zero if none).
func (l *Leaders) ElectedAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.electedAt
}

// Run asks every interval until ctx ends.
func (l *Leaders) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for ctx.Err() == nil {
		_, _ = l.Leader(ctx)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// Watch runs the tracker in the background, asking every interval, until
// the returned stop is called; stop returns once the tracker has ended.
func (l *Leaders) Watch(ctx context.Context, interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx, interval) }()
	return func() { cancel(); <-done }
}

// Until asks until the leader satisfies ok, within ctx: for "the stream has
// a leader" (ok accepts any) or "another node leads" (ok rejects the old).
func (l *Leaders) Until(ctx context.Context, ok func(lead string) bool) (string, error) {
	var lead string
	err := containers.Retry(ctx, func() error {
		var err error
		lead, err = l.Leader(ctx)
		if err != nil {
			return err
		}
		if !ok(lead) {
			return fmt.Errorf("%s led by %q", l.key, lead)
		}
		return nil
	})
	return lead, err
}

// Fault applies fault k to the node that leads now: it finds the leader
// (within 15 s), names the node with node, and injects, holds and heals
// through n. It returns the leader it hurt.
func (n *Nemesis) Fault(ctx context.Context, k Kind, l *Leaders, node func(lead string) (Target, error), hold time.Duration) (string, error) {
	fctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	lead, err := l.Until(fctx, func(string) bool { return true })
	cancel()
	if err != nil {
		return "", fmt.Errorf("no leader to fault: %w", err)
	}
	t, err := node(lead)
	if err != nil {
		return lead, err
	}
	return lead, n.Apply(ctx, k, t, hold)
}
