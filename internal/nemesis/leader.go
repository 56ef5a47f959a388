package nemesis

import (
	"context"
	"fmt"
	"sync"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	natsadapter "github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/history"
)

// Leaders watches which server leads a JetStream stream of a cluster, and
// notes every change on the timeline (actor "observer", action "leader"):
// "n2 -> none" when the leader is lost, "n2 -> n3" when another is elected.
type Leaders struct {
	js     jetstream.JetStream
	nc     *natsgo.Conn
	stream string
	rec    *history.Recorder

	mu      sync.Mutex
	current string // "" while the stream has no leader
	known   string // the last leader seen
	changes int
	history []string // every leader seen, in order
	firstAt time.Time
	// electedAt is when a leader other than the previous one was first seen.
	electedAt time.Time
}

// WatchLeader starts watching topic's stream on the cluster at url.
func WatchLeader(url, topic string, rec *history.Recorder) (*Leaders, error) {
	nc, err := natsgo.Connect(url, natsgo.MaxReconnects(-1), natsgo.ReconnectWait(50*time.Millisecond), natsgo.Timeout(2*time.Second))
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &Leaders{js: js, nc: nc, stream: natsadapter.StreamName(topic), rec: rec}, nil
}

// Leader asks the cluster for the stream's leader now (each question bounded
// by a second) and notes a change.
func (l *Leaders) Leader(ctx context.Context) (string, error) {
	lead, err := l.ask(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil || lead == "" {
		if err == nil {
			err = fmt.Errorf("stream %s has no leader now", l.stream)
		}
		// While the leader is gone the stream cannot say who leads. A
		// leader seen before and lost now is a change on the timeline.
		if l.current != "" {
			l.rec.Note("observer", "leader", l.stream, fmt.Sprintf("%s -> none (%v)", l.current, err))
			l.current = ""
		}
		return "", err
	}
	if lead != l.current {
		was := l.known
		if was == "" {
			was = "none"
			l.firstAt = time.Now()
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
		l.rec.Note("observer", "leader", l.stream, fmt.Sprintf("%s -> %s", was, lead))
		l.current, l.known = lead, lead
	}
	return lead, nil
}

func (l *Leaders) ask(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	s, err := l.js.Stream(ctx, l.stream)
	if err != nil {
		return "", err
	}
	info := s.CachedInfo()
	if info.Cluster == nil {
		return "", fmt.Errorf("stream %s is not clustered", l.stream)
	}
	return info.Cluster.Leader, nil
}

// Healthy succeeds once the stream has a leader and every other replica is
// online and current: a restarted node has caught up, so reads and writes
// no longer depend on which node a client reaches.
func (l *Leaders) Healthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s, err := l.js.Stream(ctx, l.stream)
	if err != nil {
		return err
	}
	info := s.CachedInfo()
	if info.Cluster == nil || info.Cluster.Leader == "" {
		return fmt.Errorf("stream %s has no leader", l.stream)
	}
	for _, r := range info.Cluster.Replicas {
		if r.Offline || !r.Current {
			return fmt.Errorf("replica %s of stream %s is not current yet", r.Name, l.stream)
		}
	}
	return nil
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

// Run polls the leader every interval until ctx ends.
func (l *Leaders) Run(ctx context.Context, interval time.Duration) {
	for ctx.Err() == nil {
		_, _ = l.Leader(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(interval):
		}
	}
}

// Close ends the watcher's connection.
func (l *Leaders) Close() { l.nc.Close() }

// KillLeader is the cluster fault: it finds the stream's leader, kills its
// container (SIGKILL), holds, starts it again and waits until it answers.
func KillLeader(nm *Nemesis, c *containers.NATSCluster, l *Leaders, hold time.Duration) Broken {
	return func(ctx context.Context) error {
		_, err := FaultLeader(ctx, nm, Kill, c, l, hold)
		return err
	}
}

// FaultLeader applies fault k (Kill or Restart) to the node leading l's
// stream: it finds the leader (bounded by 15 s), injects, holds, heals and
// waits until the node answers. It returns the node it hurt.
func FaultLeader(ctx context.Context, nm *Nemesis, k Kind, c *containers.NATSCluster, l *Leaders, hold time.Duration) (string, error) {
	fctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	var lead string
	err := containers.Retry(fctx, func() error {
		var err error
		lead, err = l.Leader(fctx)
		return err
	})
	cancel()
	if err != nil {
		return "", fmt.Errorf("no stream leader to fault: %w", err)
	}
	node := c.Node(lead)
	if node == nil {
		return lead, fmt.Errorf("leader %q is no node of the cluster", lead)
	}
	return lead, nm.Apply(ctx, k, Target{Name: lead + " (stream leader)", Container: node.Container, Ready: node.Ping}, hold)
}
