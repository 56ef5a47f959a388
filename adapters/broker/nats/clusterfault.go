package nats

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/nemesis"
	"github.com/onceproof/tck/mq"
)

// ClusterFaults hurts the nodes of one cluster on behalf of several rules
// running at once, one node at a time: two rules each killing "their"
// stream leader together could take two of three nodes down and the cluster
// would lose its quorum, which is another fault than the one either asked for.
type ClusterFaults struct {
	C *Cluster
	// Hold is how long the killed leader stays down once another node
	// leads its stream (default 2 s).
	Hold time.Duration
	// Settle bounds the wait for a stream leader after a heal (default 30 s;
	// NATS elects within its election timeout, 4 to 9 s by default).
	Settle time.Duration
	// Probe, when set, opens a broker handle for the leader-change probe
	// KillStreamLeader carries across the kill (see LeaderProbe).
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

// streamLeaders tracks the leader of topic's stream on the cluster; close
// ends its connection.
func streamLeaders(url, topic string, log nemesis.Log) (*nemesis.Leaders, jetstream.JetStream, func(), error) {
	nc, err := natsgo.Connect(url, natsgo.MaxReconnects(-1), natsgo.ReconnectWait(50*time.Millisecond), natsgo.Timeout(2*time.Second))
	if err != nil {
		return nil, nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, nil, err
	}
	stream := StreamName(topic)
	l := nemesis.Track(stream, func(ctx context.Context) (string, error) { return StreamLeader(ctx, js, stream) }, log)
	return l, js, nc.Close, nil
}

// StreamLeader asks JetStream which server leads stream now.
func StreamLeader(ctx context.Context, js jetstream.JetStream, stream string) (string, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return "", err
	}
	info := s.CachedInfo()
	if info.Cluster == nil {
		return "", fmt.Errorf("stream %s is not clustered", stream)
	}
	return info.Cluster.Leader, nil
}

// streamHealthy succeeds once stream has a leader and every other replica
// is online and current: a restarted node has caught up, so reads and
// writes no longer depend on which node a client reaches.
func streamHealthy(ctx context.Context, js jetstream.JetStream, stream string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	info := s.CachedInfo()
	if info.Cluster == nil || info.Cluster.Leader == "" {
		return fmt.Errorf("stream %s has no leader", stream)
	}
	for _, r := range info.Cluster.Replicas {
		if r.Offline || !r.Current {
			return fmt.Errorf("replica %s of stream %s is not current yet", r.Name, stream)
		}
	}
	return nil
}

// victim names the node leading now, for the nemesis.
func (cf *ClusterFaults) victim(lead string) (nemesis.Target, error) {
	node := cf.C.Node(lead)
	if node == nil {
		return nemesis.Target{}, fmt.Errorf("leader %q is no node of the cluster", lead)
	}
	return node.victim(lead + " (stream leader)"), nil
}

// KillStreamLeader is the broker suite's Disrupt for a cluster: it kills
// (SIGKILL) the node leading topic's stream, holds, starts it again, and
// returns once the stream has a leader again. A tracker asks for the leader
// every 100 ms from before the kill until after the election, noting each
// change on log ("n2 -> none", "none -> n3"), and log gets the count of
// leader changes and the order of leaders. With Probe set it also carries
// the leader-change probe across the kill: a violation it sees is an error
// wrapping ErrProbe; a probe that could not run, another error.
func (cf *ClusterFaults) KillStreamLeader(ctx context.Context, rule, topic string, log Log) error {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	l, js, closeConn, err := streamLeaders(cf.C.URL, topic, log)
	if err != nil {
		return fmt.Errorf("watching the stream leader: %w", err)
	}
	defer closeConn()
	stream := StreamName(topic)
	stopWatch := l.Watch(ctx, 100*time.Millisecond)
	defer stopWatch()

	nm := nemesis.New(log)
	nm.HealTimeout = cf.settle()
	fctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	lead, err := l.Until(fctx, func(string) bool { return true })
	cancel()
	if err != nil {
		return fmt.Errorf("no stream leader to kill: %w", err)
	}
	victim, err := cf.victim(lead)
	if err != nil {
		return err
	}
	var probe *probeRun
	if cf.Probe != nil {
		probe, err = startProbe(ctx, cf.Probe, cf.C.URL, topic, len(cf.C.Nodes), log)
		if err != nil {
			return err
		}
		if err := probe.lead(ctx, lead); err != nil {
			probe.close()
			return fmt.Errorf("probe: moving its leaders to %s: %w", lead, err)
		}
		log.Note("probe", "leader", probe.p.Topic, "stream and consumer led by "+lead+", every replica current")
		defer func() {
			if !probe.finished {
				probe.close()
			}
		}()
	}
	killedAt := time.Now()
	if err := nm.Inject(ctx, nemesis.Kill, victim); err != nil {
		return err
	}
	// The node stays down until another one leads the stream (the
	// survivors elect within their election timeout, 4 to 9 s), then for
	// Hold on the new leader. A fixed hold shorter than the election
	// timeout would let the killed node come back in time to be elected
	// again, and there would be no leader change to see.
	sctx, cancel := context.WithTimeout(ctx, cf.settle())
	_, elected := l.Until(sctx, func(now string) bool { return now != lead })
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
	if err := nm.Heal(context.WithoutCancel(ctx), nemesis.Kill, victim); err != nil {
		return err
	}
	if elected != nil {
		log.Note("nemesis", "election", stream, fmt.Sprintf("no other node took the lead within %s of the kill: %v", cf.settle(), elected))
	}
	// The fault is over when the stream has a leader again and the
	// restarted node caught up.
	err = cf.awaitHealthy(ctx, l, js, stream)
	if err == nil {
		log.Note("nemesis", "healthy", stream, "a leader, and every replica current")
	}
	changes := l.Changes()
	log.Figure("stream leader changes", changes, "changes")
	log.Figure("stream leader killed", lead, "")
	log.Figure("stream leaders in order", strings.Join(l.History(), " -> "), "")
	if at := l.ElectedAt(); !at.IsZero() {
		log.Figure("new leader seen after the kill", at.Sub(killedAt).Seconds(), "s")
	}
	log.Notef("%s: the stream leader %s was killed (SIGKILL), kept down until another node led the stream and %s more, then restarted; stream leaders in order: %s (%d change(s))",
		rule, lead, cf.hold(), strings.Join(l.History(), " -> "), changes)
	if probe != nil {
		probe.finish(ctx, log)
	}
	if err != nil {
		return fmt.Errorf("no stream leader within %s after the heal: %w", cf.settle(), err)
	}
	if changes == 0 {
		log.Notef("hazard: the stream leader %s was killed and no other node took the lead before it came back", lead)
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

// awaitHealthy waits (within Settle) until the stream has a leader and
// every replica is current.
func (cf *ClusterFaults) awaitHealthy(ctx context.Context, l *nemesis.Leaders, js jetstream.JetStream, stream string) error {
	sctx, cancel := context.WithTimeout(ctx, cf.settle())
	defer cancel()
	return containers.Retry(sctx, func() error {
		if _, err := l.Leader(sctx); err != nil {
			return err
		}
		return streamHealthy(sctx, js, stream)
	})
}

// RestartStreamLeader restarts the node leading topic's stream, gracefully
// (SIGTERM) or abruptly (SIGKILL), and returns once the stream has a leader
// again and every replica is current. It is the restart rule's restart on a
// cluster: the two other replicas stay up.
func (cf *ClusterFaults) RestartStreamLeader(ctx context.Context, topic string, abrupt bool) error {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	l, js, closeConn, err := streamLeaders(cf.C.URL, topic, nil)
	if err != nil {
		return err
	}
	defer closeConn()
	nm := nemesis.New(nil)
	nm.HealTimeout = cf.settle()
	k := nemesis.Restart
	if abrupt {
		k = nemesis.Kill
	}
	if _, err := nm.Fault(ctx, k, l, cf.victim, 0); err != nil {
		return err
	}
	return cf.awaitHealthy(ctx, l, js, StreamName(topic))
}
