package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
)

// ClusterFaults hurts the nodes of one NATS cluster on behalf of several
// rules running at once, one node at a time: two rules each killing "their"
// stream leader together could take two of three nodes down and the cluster
// would lose its quorum, which is another fault than the one either asked for.
type ClusterFaults struct {
	C *containers.NATSCluster
	// Hold is how long the killed leader stays down once another node
	// leads its stream (default 2 s).
	Hold time.Duration
	// Settle bounds the wait for a stream leader after a heal (default 30 s;
	// NATS elects within its election timeout, 4 to 9 s by default).
	Settle time.Duration
	// Probe, when set, opens a broker handle for the leader-change probe
	// KillStreamLeader carries across the kill (see LeaderProbe): de-dupe
	// of a retry and redelivery of an unacked delivery, on a topic of the
	// probe's own whose leaders are moved to the node killed.
	Probe func(ctx context.Context) (mq.Broker, error)

	mu sync.Mutex
}

// ErrProbe marks an error of KillStreamLeader that is a violation the
// leader-change probe saw, not a fault that failed to apply.
var ErrProbe = errors.New("leader-change probe")

func (cf *ClusterFaults) hold() time.Duration {
	if cf.Hold <= 0 {
		return 2 * time.Second
	}
	return cf.Hold
}

func (cf *ClusterFaults) settle() time.Duration {
	if cf.Settle <= 0 {
		return 30 * time.Second
	}
	return cf.Settle
}

// KillStreamLeader is the broker suite's Disrupt for a cluster: it kills
// (SIGKILL) the node leading topic's stream, holds, starts it again, and
// returns once the stream has a leader again. A watcher polls the leader
// every 100 ms from before the kill until after the election, noting each
// change on rec ("n2 -> none", "none -> n3"); ev gets the count of leader
// changes and the order of leaders. With Probe set it also carries the
// leader-change probe across the kill (see LeaderProbe): a violation it sees
// is an error wrapping ErrProbe; a probe that could not run, another error.
func (cf *ClusterFaults) KillStreamLeader(ctx context.Context, rule, topic string, rec *history.Recorder, ev *verdict.Evidence) error {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	l, err := WatchLeader(cf.C.URL, topic, rec)
	if err != nil {
		return fmt.Errorf("watching the stream leader: %w", err)
	}
	defer l.Close()
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); l.Run(wctx, 100*time.Millisecond) }()
	defer func() { stopWatch(); <-watched }()

	nm := New(rec)
	nm.HealTimeout = cf.settle()
	fctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	var lead string
	err = containers.Retry(fctx, func() error {
		var err error
		lead, err = l.Leader(fctx)
		return err
	})
	cancel()
	if err != nil {
		return fmt.Errorf("no stream leader to kill: %w", err)
	}
	node := cf.C.Node(lead)
	if node == nil {
		return fmt.Errorf("leader %q is no node of the cluster", lead)
	}
	var probe *probeRun
	if cf.Probe != nil {
		probe, err = startProbe(ctx, cf.Probe, cf.C.URL, topic, len(cf.C.Nodes), rec)
		if err != nil {
			return err
		}
		if err := probe.lead(ctx, lead); err != nil {
			probe.close()
			return fmt.Errorf("probe: moving its leaders to %s: %w", lead, err)
		}
		rec.Note("probe", "leader", probe.p.Topic, "stream and consumer led by "+lead+", every replica current")
		defer func() {
			if !probe.finished {
				probe.close()
			}
		}()
	}
	victim := Target{Name: lead + " (stream leader)", Container: node.Container, Ready: node.Ping}
	killedAt := time.Now()
	if err := nm.Inject(ctx, Kill, victim); err != nil {
		return err
	}
	// The node stays down until another one leads the stream (the
	// survivors elect within their election timeout, 4 to 9 s), then for
	// Hold on the new leader. A fixed hold shorter than the election
	// timeout would let the killed node come back in time to be elected
	// again, and there would be no leader change to see.
	sctx, cancel := context.WithTimeout(ctx, cf.settle())
	elected := containers.Retry(sctx, func() error {
		now, err := l.Leader(sctx)
		if err != nil {
			return err
		}
		if now == "" || now == lead {
			return fmt.Errorf("leader %q", now)
		}
		return nil
	})
	cancel()
	if elected == nil && probe != nil {
		// While the killed node is still down: the new leaders answer.
		probe.afterElection(ctx, lead)
	}
	if elected == nil {
		select {
		case <-ctx.Done():
		case <-time.After(cf.hold()):
		}
	}
	if err := nm.Heal(context.WithoutCancel(ctx), Kill, victim); err != nil {
		return err
	}
	if elected != nil {
		rec.Note("nemesis", "election", l.stream, fmt.Sprintf("no other node took the lead within %s of the kill: %v", cf.settle(), elected))
	}
	// The fault is over when the stream has a leader again and the
	// restarted node caught up.
	sctx, cancel = context.WithTimeout(ctx, cf.settle())
	err = containers.Retry(sctx, func() error {
		if _, err := l.Leader(sctx); err != nil {
			return err
		}
		return l.Healthy(sctx)
	})
	cancel()
	if err == nil {
		rec.Note("nemesis", "healthy", l.stream, "a leader, and every replica current")
	}
	changes := l.Changes()
	ev.Figure("stream leader changes", changes, "changes")
	ev.Figure("stream leader killed", lead, "")
	ev.Figure("stream leaders in order", strings.Join(l.History(), " -> "), "")
	if at := l.ElectedAt(); !at.IsZero() {
		ev.Figure("new leader seen after the kill", at.Sub(killedAt).Seconds(), "s")
	}
	ev.Notef("%s: the stream leader %s was killed (SIGKILL), kept down until another node led the stream and %s more, then restarted; stream leaders in order: %s (%d change(s))",
		rule, lead, cf.hold(), strings.Join(l.History(), " -> "), changes)
	if probe != nil {
		probe.finish(ctx, ev)
	}
	if err != nil {
		return fmt.Errorf("no stream leader within %s after the heal: %w", cf.settle(), err)
	}
	if changes == 0 {
		ev.Hazard("the stream leader %s was killed and no other node took the lead before it came back", lead)
	}
	if probe != nil {
		if v := probe.p.Violations(); len(v) > 0 {
			return fmt.Errorf("%w: %s", ErrProbe, strings.Join(v, "; "))
		}
		if why := probe.p.problem(); why != "" {
			return fmt.Errorf("leader-change probe did not run as intended: %s", why)
		}
	}
	return nil
}

// RestartStreamLeader restarts the node leading topic's stream with fault k
// (Restart: SIGTERM; Kill: SIGKILL) and returns once the stream has a
// leader again. It is BR-3.1's restart on a cluster: the two other replicas
// stay up.
func (cf *ClusterFaults) RestartStreamLeader(ctx context.Context, topic string, k Kind) error {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	rec := history.New()
	l, err := WatchLeader(cf.C.URL, topic, rec)
	if err != nil {
		return err
	}
	defer l.Close()
	nm := New(nil)
	nm.HealTimeout = cf.settle()
	if _, err := FaultLeader(ctx, nm, k, cf.C, l, 0); err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, cf.settle())
	defer cancel()
	return containers.Retry(sctx, func() error {
		if _, err := l.Leader(sctx); err != nil {
			return err
		}
		return l.Healthy(sctx)
	})
}
