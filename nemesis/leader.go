package nemesis

import (
	"context"
	"fmt"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	natsadapter "github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/containers"
	"github.com/onceproof/tck/history"
)

// Leaders watches which server leads a JetStream stream of a cluster, and
// notes every change on the timeline (actor "observer", action "leader").
type Leaders struct {
	js     jetstream.JetStream
	nc     *natsgo.Conn
	stream string
	rec    *history.Recorder
	last   string
	seen   bool
	// Changes counts the leader changes seen after the first leader.
	Changes int
}

// WatchLeader starts watching topic's stream on the cluster at url.
func WatchLeader(url, topic string, rec *history.Recorder) (*Leaders, error) {
	nc, err := natsgo.Connect(url, natsgo.MaxReconnects(-1), natsgo.ReconnectWait(50*time.Millisecond))
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

// Leader asks the cluster for the stream's leader now and notes a change.
func (l *Leaders) Leader(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	s, err := l.js.Stream(ctx, l.stream)
	if err == nil {
		var info *jetstream.StreamInfo
		if info, err = s.Info(ctx); err == nil && (info.Cluster == nil || info.Cluster.Leader == "") {
			err = fmt.Errorf("stream %s has no leader now", l.stream)
		} else if err == nil {
			lead := info.Cluster.Leader
			if lead != l.last {
				was := l.last
				if was == "" {
					was = "none"
				}
				if l.seen {
					l.Changes++
				}
				l.seen = true
				l.rec.Note("observer", "leader", l.stream, fmt.Sprintf("%s (was %s)", lead, was))
				l.last = lead
			}
			return lead, nil
		}
	}
	// No answer: while the leader is gone the stream cannot say who leads.
	// A leader seen before and lost now is a change on the timeline.
	if l.last != "" {
		l.rec.Note("observer", "leader", l.stream, fmt.Sprintf("none (was %s): %v", l.last, err))
		l.last = ""
	}
	return "", err
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
		var lead string
		err := containers.Retry(ctx, func() error {
			var err error
			lead, err = l.Leader(ctx)
			return err
		})
		if err != nil {
			return err
		}
		node := c.Node(lead)
		if node == nil {
			return fmt.Errorf("leader %q is no node of the cluster", lead)
		}
		return nm.Apply(ctx, Kill, Target{Name: lead + " (stream leader)", Container: node.Container, Ready: node.Ping}, hold)
	}
}
