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
	"github.com/onceproof/tck/internal/options"
	"github.com/onceproof/tck/mq"
)

// Cluster is a JetStream cluster of nats-server containers on a private
// network. The nodes route to each other by their names on that network;
// the kit reaches each on its own loopback port.
type Cluster struct {
	network *containers.Network
	Nodes   []*Container // Nodes[i] is server "n<i+1>"
	// URL lists every node's client URL, comma-separated, as nats.go takes it.
	URL string
}

// Node returns the node whose server name is name (e.g. a stream leader).
func (c *Cluster) Node(name string) *Container {
	for _, n := range c.Nodes {
		if n.c.Spec.Name == name {
			return n
		}
	}
	return nil
}

// StartCluster starts size nodes (3 for a stream with three replicas) and
// waits until JetStream has a meta leader, i.e. streams can be created.
func StartCluster(ctx context.Context, size int, opts ...ContainerOption) (*Cluster, error) {
	o := newContainerOptions(opts)
	if size < 1 {
		size = 3
	}
	nw, err := containers.NewNetwork(ctx, "nats-cluster")
	if err != nil {
		return nil, err
	}
	c := &Cluster{network: nw}
	var routes, urls []string
	for i := 1; i <= size; i++ {
		routes = append(routes, fmt.Sprintf("nats://n%d:6222", i))
	}
	type started struct {
		n   *Container
		err error
	}
	// The nodes start together: each waits for its routes anyway.
	ch := make([]chan started, size)
	for i := range size {
		ch[i] = make(chan started, 1)
		go func() {
			oo := o
			oo.network, oo.Name, oo.Cluster, oo.Routes = nw, fmt.Sprintf("n%d", i+1), "onceproof", routes
			n, err := startContainer(ctx, oo)
			ch[i] <- started{n, err}
		}()
	}
	var errs []error
	for i := range size {
		s := <-ch[i]
		if s.err != nil {
			errs = append(errs, s.err)
			continue
		}
		c.Nodes = append(c.Nodes, s.n)
		urls = append(urls, s.n.URL)
	}
	if err := errors.Join(errs...); err != nil {
		_ = c.Remove(context.WithoutCancel(ctx))
		return nil, err
	}
	c.URL = strings.Join(urls, ",")
	if err := containers.Retry(ctx, func() error { return placeable(ctx, c.URL, size) }); err != nil {
		_ = c.Remove(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("nats cluster: cannot place a stream on all %d nodes: %w", size, err)
	}
	return c, nil
}

// placeable succeeds once the cluster places (and removes) a stream with
// one replica per node. An elected meta leader is not enough: on a loaded
// host it may not yet count every peer as online, and the first
// replicated stream is then refused ("no suitable peers for placement,
// peer offline").
func placeable(ctx context.Context, url string, size int) error {
	nc, err := natsgo.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	// Without a meta leader the request gets no answer at all: bound each
	// attempt, so Retry tries again.
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	const name = "TCK_READY"
	if _, err := js.CreateOrUpdateStream(actx, jetstream.StreamConfig{Name: name, Subjects: []string{"tck.ready"}, Replicas: size, Storage: jetstream.MemoryStorage}); err != nil {
		return err
	}
	return js.DeleteStream(actx, name)
}

// Remove removes every node, then the network.
func (c *Cluster) Remove(ctx context.Context) error {
	var errs []error
	for _, n := range c.Nodes {
		errs = append(errs, n.Remove(ctx))
	}
	errs = append(errs, c.network.Remove(ctx))
	return errors.Join(errs...)
}

// ClusterReplicas is the replica count of every stream the cluster target
// creates: one per node, so the stream survives the loss of any one.
const ClusterReplicas = 3

// ClusterRules are the rules the cluster target is for: the ones its fault
// is aimed at, and the atomic batch rules, whose commit on a replicated
// stream is one Raft proposal of every member (nats-server
// processJetStreamAtomicBatchMsg, ProposeMulti), not the single server's
// path.
var ClusterRules = []string{"BR-2.9", "BR-3.1", "BR-8.1", "BR-8.2", "BR-8.3"}

// RunCluster starts three nats-server containers from image ("": Image())
// on a private network, once per run; every topic is a stream with three replicas. The total-queue
// rule runs while the leader of its stream is killed (SIGKILL) and restarted
// (Disrupt, with the leader changes on its timeline); the restart rule
// restarts the node leading its stream (gracefully, then with SIGKILL) while
// the two other replicas stay up. One node is down at a time.
func RunCluster(ctx context.Context, image string, opts ...Option) (*Target, error) {
	client := options.Apply(opts).client
	var copts []ContainerOption
	if image != "" {
		copts = append(copts, WithImage(image))
	}
	c, err := StartCluster(ctx, ClusterReplicas, copts...)
	if err != nil {
		return nil, err
	}
	remove := func() error { return c.Remove(context.Background()) }
	inner := client.Wrap
	client.Wrap = func(b mq.Broker) mq.Broker {
		if inner != nil {
			b = inner(b)
		}
		return &replicated{Broker: b, n: ClusterReplicas}
	}
	t, err := newTarget(ctx, c.URL, client, remove)
	if err != nil {
		_ = remove()
		return nil, err
	}
	faults := &ClusterFaults{C: c, Probe: func(ctx context.Context) (mq.Broker, error) {
		return Connect(ctx, c.URL, Options{DedupeWindow: ProbeWindow})
	}}
	t.Private = func(ctx context.Context) (Server, error) {
		return &clusterServer{c: c, client: client, faults: faults}, nil
	}
	t.Disrupt = faults.KillStreamLeader
	t.Only = ClusterRules
	t.OnlyWhy = `needs capability "undisturbed broker": broker/nats-cluster kills and restarts stream leaders during the run, which moves the leaders and the timings of every stream on the cluster; this rule runs on broker/nats, and the cluster target checks BR-2.9, BR-3.1 and the atomic batch rules BR-8.x`
	// An election takes up to the election timeout (4 to 9 s) on top of
	// the workload; the rule's budget leaves room for it.
	t.Budget = 90 * time.Second
	var names []string
	for _, n := range c.Nodes {
		names = append(names, n.c.Spec.Name+"="+n.c.Name)
	}
	t.Version = "nats-server " + c.Nodes[0].Version + " (3-node cluster, containers), nats.go " + ClientVersion()
	t.Config["restartable"] = "true"
	t.Config["image"] = c.Nodes[0].c.Spec.Image
	t.Config["replicas"] = fmt.Sprint(ClusterReplicas)
	t.Config["fault"] = "BR-2.9: the stream leader killed (SIGKILL), kept down until another node leads and 2s more, restarted; BR-3.1: the stream leader's node restarted (SIGTERM, then SIGKILL)"
	if s, err := c.Nodes[0].SyncSetting(ctx); err == nil {
		t.Config["sync"] = syncString(s)
	}
	t.Notes = append(t.Notes, fmt.Sprintf("cluster %s on network %s, removed when the run ends; one node is down at a time, so the cluster keeps its quorum",
		strings.Join(names, ", "), c.network.Name))
	return t, nil
}

// replicated gives every topic created through it n replicas, and tells
// created (when set) the topics it created.
type replicated struct {
	mq.Broker
	n int

	mu      sync.Mutex
	created func(topic string)
}

func (r *replicated) onCreate(f func(topic string)) {
	r.mu.Lock()
	r.created = f
	r.mu.Unlock()
}

func (r *replicated) CreateTopic(ctx context.Context, name string, cfg mq.TopicConfig) error {
	if cfg.Replicas == 0 {
		cfg.Replicas = r.n
	}
	err := r.Broker.CreateTopic(ctx, name, cfg)
	r.mu.Lock()
	created := r.created
	r.mu.Unlock()
	if err == nil && created != nil {
		created(name)
	}
	return err
}

// ReadAll reads the topic back, each attempt bounded: right after a node
// restart a request can be forwarded to a leader that is gone and never
// answered, and one unanswered request must not use up the rule's budget.
func (r *replicated) ReadAll(ctx context.Context, topic string) ([]mq.Stored, error) {
	var out []mq.Stored
	ctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	err := containers.Retry(ctx, func() error {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var err error
		out, err = r.Broker.ReadAll(actx, topic)
		return err
	})
	return out, err
}

// PublishBatch passes an atomic batch through to the handle inside.
func (r *replicated) PublishBatch(ctx context.Context, topic string, b mq.Batch) (mq.BatchAck, error) {
	if bp, ok := r.Broker.(mq.BatchPublisher); ok {
		return bp.PublishBatch(ctx, topic, b)
	}
	return mq.BatchAck{}, mq.ErrUnsupported
}

// BatchLimits are the limits of the handle inside.
func (r *replicated) BatchLimits() mq.BatchLimits {
	if bp, ok := r.Broker.(mq.BatchPublisher); ok {
		return bp.BatchLimits()
	}
	return mq.BatchLimits{}
}

// clusterServer is the restart rule's server on the cluster: the shared
// cluster, where a restart is of the node leading the rule's own stream.
type clusterServer struct {
	c      *Cluster
	client Client
	faults *ClusterFaults

	mu     sync.Mutex
	topics []string
}

func (s *clusterServer) Open(ctx context.Context) (mq.Broker, error) {
	b, err := s.client.Open(ctx, s.c.URL)
	if err != nil {
		return nil, err
	}
	r, ok := b.(*replicated)
	if !ok {
		_ = b.Close()
		return nil, fmt.Errorf("the cluster's client gave a %T, not its replicating handle", b)
	}
	r.onCreate(func(topic string) {
		s.mu.Lock()
		s.topics = append(s.topics, topic)
		s.mu.Unlock()
	})
	return r, nil
}

// Restart restarts the node leading the stream of the first topic created
// through this server (SIGTERM or SIGKILL), then waits until the stream has
// a leader again.
func (s *clusterServer) Restart(ctx context.Context, abrupt bool) error {
	s.mu.Lock()
	var topic string
	if len(s.topics) > 0 {
		topic = s.topics[0]
	}
	s.mu.Unlock()
	if topic == "" {
		return errors.New("no topic was created on this server, so no stream leader to restart")
	}
	return s.faults.RestartStreamLeader(ctx, topic, abrupt)
}

func (s *clusterServer) Sync(ctx context.Context) (string, bool, error) {
	sy, err := s.c.Nodes[0].SyncSetting(ctx)
	if err != nil {
		return "", false, err
	}
	return syncString(sy) + "; a restart here is of the node leading the stream, the two other replicas stay up", sy.CanLoseAcked(), nil
}

// Stop leaves the shared cluster to the target's Stop.
func (s *clusterServer) Stop() error { return nil }
