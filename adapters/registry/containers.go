package registry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	natsadapter "github.com/onceproof/tck/adapters/broker/nats"
	pgstore "github.com/onceproof/tck/adapters/eventstore/postgres"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/nemesis"
	"github.com/onceproof/tck/internal/precheck"
	"github.com/onceproof/tck/internal/redact"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/broker"
)

// The container mode of a kind: start the backend in a labelled container
// (package containers), then hand its URL to the kind's external path, so a
// container target is checked exactly as a server at a URL would be. A kind
// added later (Redis, Kafka) needs a Start* in package containers and a few
// lines here.

// inContainer binds a container's URL through the kind's external path. The
// started target's Stop also removes the container. Any failure to start is
// target.Unavailable (exit 4): no Docker, a missing image, a server that
// never became ready.
func inContainer(ref target.Ref, c *containers.Container, image, url, version string,
	bind func(url string, stop func() error) (*target.Started, error)) (*target.Started, error) {
	remove := func() error { return c.Remove(context.Background()) }
	st, err := bind(url, remove)
	if err != nil {
		_ = remove()
		return nil, err
	}
	st.Info.Mode = target.Container
	st.Info.Address = target.Redact(url)
	if version != "" {
		st.Info.Version = version
	}
	if st.Info.Config == nil {
		st.Info.Config = map[string]string{}
	}
	st.Info.Config["image"] = image
	st.Info.Notes = append(st.Info.Notes, fmt.Sprintf("container %s from image %s, removed when the run ends", c.Name, image))
	return st, nil
}

// natsContainer is broker/nats=container: one nats-server per run, JetStream
// on file storage inside the container, default sync setting (reported).
// Rules that restart a server (BR-1.7, BR-3.1) get a container of their own,
// restarted for real: gracefully (docker stop) or abruptly (SIGKILL).
func natsContainer(ctx context.Context, ref target.Ref, client NATSClient) (*target.Started, error) {
	n, err := containers.StartNATS(ctx, containers.NATSOptions{})
	if err != nil {
		return nil, target.Unavailable(ref, err)
	}
	// The suite stops a rule's private server when the rule's workload
	// ends, which may be after the run returns; the target's Stop removes
	// any still there, so nothing outlives the run.
	var mu sync.Mutex
	var privates []*containers.Container
	private := func(ctx context.Context) (broker.Server, error) {
		pn, err := containers.StartNATS(ctx, containers.NATSOptions{})
		if err != nil {
			return nil, err
		}
		mu.Lock()
		privates = append(privates, pn.Container)
		mu.Unlock()
		return &natsContainerServer{n: pn, client: client}, nil
	}
	st, err := inContainer(ref, n.Container, n.Spec.Image, n.URL, "nats-server "+n.Version+" (container)",
		func(url string, stop func() error) (*target.Started, error) {
			return natsStarted(ctx, ref, url, client, func() error {
				mu.Lock()
				defer mu.Unlock()
				errs := []error{stop()}
				for _, c := range privates {
					errs = append(errs, c.Remove(context.Background()))
				}
				return errors.Join(errs...)
			}, private)
		})
	if err != nil {
		return nil, err
	}
	if always, interval, err := n.Sync(ctx); err == nil {
		st.Info.Config["sync"] = syncString(always, interval)
	}
	return st, nil
}

// natsContainerServer is a rule's own nats-server container (broker.Server).
type natsContainerServer struct {
	n      *containers.NATS
	client NATSClient
}

func (s *natsContainerServer) Open(ctx context.Context) (mq.Broker, error) {
	return s.client.open(ctx, s.n.URL)
}

// Restart stops the container (SIGTERM: nats-server flushes its stores) or
// kills it (SIGKILL: no flush), starts it again on the same file store and
// the same loopback port, and waits until the server answers.
func (s *natsContainerServer) Restart(ctx context.Context, how broker.Restart) error {
	k := nemesis.Restart
	if how == broker.Abrupt {
		k = nemesis.Kill
	}
	nm := nemesis.New(nil)
	return nm.Apply(ctx, k, nemesis.Target{Name: "nats", Container: s.n.Container, Ready: s.n.Ping}, 0)
}

func (s *natsContainerServer) Sync(ctx context.Context) (string, bool, error) {
	always, interval, err := s.n.Sync(ctx)
	if err != nil {
		return "", false, err
	}
	return syncString(always, interval), !always, nil
}

func (s *natsContainerServer) Stop() error { return s.n.Remove(context.Background()) }

// syncString spells JetStream's sync setting as the report shows it.
func syncString(always bool, interval fmt.Stringer) string {
	if always {
		return "always (fsync every write)"
	}
	if s := interval.String(); s != "0s" {
		return "every " + s + " (acked writes since the last sync can be lost on power loss)"
	}
	return "server default, every 2m0s (acked writes since the last sync can be lost on power loss)"
}

// postgresContainer is eventstore/postgres=container: a fresh PostgreSQL per
// run, through the same pgx adapter as a URL.
func postgresContainer(ctx context.Context, ref target.Ref) (*target.Started, error) {
	p, err := containers.StartPostgres(ctx, containers.PostgresOptions{})
	if err != nil {
		return nil, target.Unavailable(ref, err)
	}
	return inContainer(ref, p.Container, p.Spec.Image, p.URL, "",
		func(url string, stop func() error) (*target.Started, error) {
			db, err := pgstore.Open(ctx, url)
			if err != nil {
				return nil, target.Unavailable(ref, redact.Error(err, redact.Secrets(url)...))
			}
			caps := es.Capabilities{PreCheck: precheck.New}
			st := esStarted(ref, "PostgreSQL "+db.Version()+" (container)", caps,
				func(context.Context) (es.EventStore, error) { return db.Store(), nil },
				func() error { return errors.Join(db.Close(), stop()) })
			return st, nil
		})
}

func init() { extra = append(extra, addClusters) }

func addClusters(r *target.Registry) {
	r.Add(target.Kind{
		Suite: "broker", Name: "nats-cluster",
		Summary: "a three-node NATS JetStream cluster in containers, streams with three replicas; the stream leader is killed and restarted during BR-2.9",
		Modes:   []target.Mode{target.Container},
		Needs:   "Docker and the image nats:2.15.2 (TCK_NATS_IMAGE; `make images` builds it)",
		Start:   natsClusterContainer,
	})
}

// clusterRules are the rules broker/nats-cluster runs: the ones its fault
// is aimed at. The others are not-applicable there, saying why.
var clusterRules = map[string]bool{"BR-2.9": true, "BR-3.1": true}

// clusterReplicas is the replica count of every stream the cluster target
// creates: one per node, so the stream survives the loss of any one.
const clusterReplicas = 3

// natsClusterContainer is broker/nats-cluster=container: three nats-server
// containers on a private network, started once per run; every topic is a
// stream with three replicas. BR-2.9 runs while the leader of its stream is
// killed (SIGKILL) and restarted, with the leader changes on its timeline;
// BR-3.1 restarts the node leading its stream (gracefully, then with
// SIGKILL) while the two other replicas stay up. One node is down at a time.
func natsClusterContainer(ctx context.Context, ref target.Ref) (*target.Started, error) {
	c, err := containers.StartNATSCluster(ctx, clusterReplicas, containers.NATSOptions{})
	if err != nil {
		return nil, target.Unavailable(ref, err)
	}
	remove := func() error { return c.Remove(context.Background()) }
	client := NATSClient{Wrap: func(b mq.Broker) mq.Broker { return replicated{Broker: b, n: clusterReplicas} }}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	probe, err := client.open(cctx, c.URL)
	if err != nil {
		_ = remove()
		return nil, target.Unavailable(ref, redact.Error(err, redact.Secrets(c.URL)...))
	}
	caps := probe.Capabilities()
	_ = probe.Close()
	faults := &nemesis.ClusterFaults{C: c, Probe: func(ctx context.Context) (mq.Broker, error) {
		return natsadapter.Connect(ctx, c.URL, natsadapter.Options{DedupeWindow: nemesis.ProbeWindow})
	}}
	na := map[string]string{}
	for _, r := range catalog.All("broker") {
		if !clusterRules[r.ID] {
			na[r.ID] = `needs capability "undisturbed broker": broker/nats-cluster kills and restarts stream leaders during the run, which moves the leaders and the timings of every stream on the cluster; this rule runs on broker/nats, and the cluster target checks BR-2.9 and BR-3.1`
		}
	}
	t := broker.Target{
		Open: func(ctx context.Context) (mq.Broker, error) { return client.open(ctx, c.URL) },
		Caps: caps,
		Private: func(ctx context.Context) (broker.Server, error) {
			return &clusterServer{c: c, client: client, faults: faults}, nil
		},
		// BR-2.9's fault carries the leader-change probe: a violation it
		// sees fails the rule; a probe that could not run leaves it unknown.
		Disrupt: func(ctx context.Context, rule, topic string, rec *history.Recorder, ev *verdict.Evidence) error {
			err := faults.KillStreamLeader(ctx, rule, topic, rec, ev)
			if errors.Is(err, nemesis.ErrProbe) {
				return fmt.Errorf("%w: %w", broker.ErrViolation, err)
			}
			return err
		},
		NotApplicable: na,
		// An election takes up to the election timeout (4 to 9 s) on top
		// of the workload; the rule's budget leaves room for it.
		Budget: 90 * time.Second,
	}
	var names []string
	for _, n := range c.Nodes {
		names = append(names, n.Spec.Name+"="+n.Name)
	}
	cfg := brokerConfig(caps, t)
	cfg["image"] = c.Nodes[0].Spec.Image
	cfg["replicas"] = fmt.Sprint(clusterReplicas)
	cfg["fault"] = "BR-2.9: the stream leader killed (SIGKILL), kept down until another node leads and 2s more, restarted; BR-3.1: the stream leader's node restarted (SIGTERM, then SIGKILL)"
	if always, interval, err := c.Nodes[0].Sync(ctx); err == nil {
		cfg["sync"] = syncString(always, interval)
	}
	return &target.Started{
		Info: target.Info{
			Name: ref.Key(), Suite: ref.Suite, Mode: target.Container, Address: target.Redact(c.URL),
			Version: "nats-server " + c.Nodes[0].Version + " (3-node cluster, containers), nats.go " + natsClientVersion,
			Config:  cfg,
			Notes: []string{fmt.Sprintf("cluster %s on network %s, removed when the run ends; one node is down at a time, so the cluster keeps its quorum",
				strings.Join(names, ", "), c.Network.Name)},
		},
		Register: func() { broker.Register(t) },
		Stop:     remove,
	}, nil
}

// replicated gives every topic created through it n replicas.
type replicated struct {
	mq.Broker
	n       int
	created func(topic string)
}

func (r replicated) CreateTopic(ctx context.Context, name string, cfg mq.TopicConfig) error {
	if cfg.Replicas == 0 {
		cfg.Replicas = r.n
	}
	err := r.Broker.CreateTopic(ctx, name, cfg)
	if err == nil && r.created != nil {
		r.created(name)
	}
	return err
}

// ReadAll reads the topic back, each attempt bounded: right after a node
// restart a request can be forwarded to a leader that is gone and never
// answered, and one unanswered request must not use up the rule's budget.
func (r replicated) ReadAll(ctx context.Context, topic string) ([]mq.Stored, error) {
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

// clusterServer is BR-3.1's broker on the cluster: the shared cluster, where
// a restart is of the node leading the rule's own stream.
type clusterServer struct {
	c      *containers.NATSCluster
	client NATSClient
	faults *nemesis.ClusterFaults

	mu     sync.Mutex
	topics []string
}

func (s *clusterServer) Open(ctx context.Context) (mq.Broker, error) {
	b, err := s.client.open(ctx, s.c.URL)
	if err != nil {
		return nil, err
	}
	r, _ := b.(replicated)
	r.created = func(topic string) {
		s.mu.Lock()
		s.topics = append(s.topics, topic)
		s.mu.Unlock()
	}
	return r, nil
}

// Restart restarts the node leading the stream of the first topic created
// through this server (SIGTERM or SIGKILL), then waits until the stream has
// a leader again.
func (s *clusterServer) Restart(ctx context.Context, how broker.Restart) error {
	s.mu.Lock()
	var topic string
	if len(s.topics) > 0 {
		topic = s.topics[0]
	}
	s.mu.Unlock()
	if topic == "" {
		return errors.New("no topic was created on this server, so no stream leader to restart")
	}
	k := nemesis.Restart
	if how == broker.Abrupt {
		k = nemesis.Kill
	}
	return s.faults.RestartStreamLeader(ctx, topic, k)
}

func (s *clusterServer) Sync(ctx context.Context) (string, bool, error) {
	always, interval, err := s.c.Nodes[0].Sync(ctx)
	if err != nil {
		return "", false, err
	}
	return syncString(always, interval) + "; a restart here is of the node leading the stream, the two other replicas stay up", !always, nil
}

// Stop leaves the shared cluster to the target's Stop.
func (s *clusterServer) Stop() error { return nil }
