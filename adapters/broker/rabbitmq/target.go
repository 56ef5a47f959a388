package rabbitmq

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/onceproof/tck/internal/options"
	"github.com/onceproof/tck/mq"
)

// This file is the broker/rabbitmq target as the kit starts it: a server at
// a URL, or a rabbitmq-server of its own from PATH, what the kit found it
// can do (Probe), and the client it reaches it with. The registry binds a
// Target to the broker suite; nothing here knows the CLI.

// Client is how the kit's handles talk to a server: the adapter's options
// and, for a mutant, the defect wrapped around every handle.
type Client struct {
	Options Options
	Wrap    func(*Broker) mq.Broker
}

// Open opens a handle on the server at url.
func (c Client) Open(ctx context.Context, url string) (mq.Broker, error) {
	b, err := Connect(ctx, url, c.Options)
	if err != nil {
		return nil, err
	}
	if c.Wrap == nil {
		return b, nil
	}
	return c.Wrap(b), nil
}

// Target is a RabbitMQ server the kit checks, opened by Open or started
// by RunLocal (or Run, in a container).
type Target struct {
	mq.Info
	Client Client
	// ConsumerTimeout is the node's consumer_timeout where the kit set it
	// (its own server): the ack wait of the rules. 0 elsewhere.
	ConsumerTimeout time.Duration
	// Management is the management API's base URL where the kit knows it
	// (its own server; WithManagement), "" otherwise: BR-6.1 then tries
	// http://HOST:15672.
	Management string
	// Private, when set, starts a server of a rule's own that the rule may
	// restart (nil: the kit cannot restart this server).
	Private func(ctx context.Context) (*OwnServer, error)
	Stop    func() error
}

// Option says how Open, Run and RunLocal reach the server.
type Option func(*settings)

type settings struct {
	client     Client
	ackWait    time.Duration
	management string
}

// WithClient sets how the kit's handles talk to the server: the adapter's
// options and, for a mutant, the defect wrapped around every handle.
func WithClient(c Client) Option { return func(s *settings) { s.client = c } }

// WithTLS sets the client's TLS configuration for an amqps:// URL
// (docs/tls.md), after any WithClient.
func WithTLS(cfg *tls.Config) Option { return func(s *settings) { s.client.Options.TLS = cfg } }

// WithAckWait sets the consumer_timeout of a server the kit starts (the
// rules' ack wait); without it the node keeps RabbitMQ's default (30 min)
// and the rules needing an ack wait are not-applicable.
func WithAckWait(d time.Duration) Option { return func(s *settings) { s.ackWait = d } }

// WithManagement names the management API's base URL of a server Open
// binds to (SplitManagement reads it from an address's ?management=).
func WithManagement(base string) Option { return func(s *settings) { s.management = base } }

// Server is what Probe found.
type Server struct {
	Product, Version, Platform string // the connection.start server properties
	Notes                      []string
}

// Probe checks that the server at url answers and lets the kit declare,
// confirm, read a stream and delete, on a scratch topic of the run
// (removed afterwards): a server without streams (before 3.9) is refused,
// and so is a login whose permissions forbid what the suite does. tlsCfg
// is the run's trust material for an amqps:// URL (nil: none).
func Probe(ctx context.Context, url, run string, tlsCfg *tls.Config) (*Server, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	b, err := Connect(ctx, url, Options{Run: run, TLS: tlsCfg})
	if err != nil {
		return nil, err
	}
	defer b.Close()
	s := &Server{}
	props := b.conn.Properties
	s.Product, _ = props["product"].(string)
	s.Version, _ = props["version"].(string)
	s.Platform, _ = props["platform"].(string)
	if s.Product != "" && s.Product != "RabbitMQ" {
		s.Notes = append(s.Notes, fmt.Sprintf("the server says it is %q, not RabbitMQ", s.Product))
	}
	topic := "probe-" + nonce()
	defer func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer dcancel()
		_ = b.DeleteTopic(dctx, topic)
	}()
	if err := b.CreateTopic(ctx, topic, mq.TopicConfig{}); err != nil {
		return nil, refused("declaring the scratch topic (a direct exchange, a stream, quorum queues: RabbitMQ 3.9 or later, and configure permission on "+NamePrefix+"*)", url, err)
	}
	if _, err := b.Publish(ctx, topic, mq.Message{ID: "probe", Payload: []byte("probe")}); err != nil {
		return nil, refused("a confirmed publish on the scratch topic (write permission)", url, err)
	}
	all, err := b.ReadAll(ctx, topic)
	if err != nil {
		return nil, refused("reading the scratch stream back (read permission)", url, err)
	}
	if len(all) != 1 {
		return nil, fmt.Errorf("the scratch stream read back %d messages after one confirmed publish", len(all))
	}
	return s, nil
}

// refused is the error of a probe step the server would not do.
func refused(step, url string, err error) error {
	msg := scrub(err.Error(), url)
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Code == amqp.AccessRefused {
		return fmt.Errorf("the server's permissions forbid %s: %s", step, msg)
	}
	return fmt.Errorf("%s failed: %s", step, msg)
}

// Open binds the kit to the RabbitMQ at url, after Probe. The kit
// cannot restart a server it did not start, nor set or read its
// consumer_timeout over AMQP.
func Open(ctx context.Context, url string, opts ...Option) (*Target, error) {
	st := options.Apply(opts)
	t, err := newTarget(ctx, url, st.client, nil)
	if err != nil {
		return nil, err
	}
	t.Management = st.management
	return t, nil
}

// newTarget probes the server at url and declares what it found.
func newTarget(ctx context.Context, url string, client Client, stop func() error) (*Target, error) {
	if client.Options.Run == "" {
		client.Options.Run = NewRun()
	}
	s, err := Probe(ctx, url, client.Options.Run, client.Options.TLS)
	if err != nil {
		return nil, err
	}
	if stop == nil {
		stop = func() error { return nil }
	}
	t := &Target{Info: mq.Info{
		URL: url, Version: "RabbitMQ " + s.Version, Caps: capabilities(client.Options),
		Config: map[string]string{
			"namePrefix":  NamePrefix + client.Options.Run + ".",
			"topic":       "a durable direct exchange; a stream (the log read back) and a quorum queue (the topic's queue) bound to it",
			"maxDeliver":  "a quorum queue of the group's own with x-delivery-limit = max-deliver - 1 and x-dead-letter-exchange",
			"publish":     "persistent, mandatory, waited on for its publisher confirm",
			"ack":         "basic.ack, then a round trip on the channel (AMQP does not answer a settle)",
			"nak":         "basic.nack requeue=true (no delay)",
			"term":        "basic.reject requeue=false",
			"fetch":       "basic.get",
			"retentions":  "limits (the stream keeps what an ack removes from the queue)",
			"restartable": "false",
		},
		Server: map[string]string{},
		Notes:  s.Notes,
		Lacks:  lacks(client.Options),
	}, Client: client, ConsumerTimeout: client.Options.ConsumerTimeout, Stop: stop}
	if s.Version != "" {
		t.Server["version"] = s.Version + " (AMQP connection.start server properties)"
	} else {
		t.Version = "RabbitMQ (version not readable)"
	}
	if s.Platform != "" {
		t.Server["platform"] = s.Platform + " (AMQP connection.start server properties)"
	}
	if client.Options.ConsumerTimeout > 0 {
		t.Server["consumer_timeout"] = fmt.Sprintf("%d ms (set by the kit in the node's rabbitmq.conf)", client.Options.ConsumerTimeout.Milliseconds())
	} else {
		t.Server["consumer_timeout"] = "not readable over AMQP (the management API or rabbitmqctl environment shows it; RabbitMQ's default is 30 min)"
	}
	return t, nil
}

// lacks is why RabbitMQ, through this adapter, does not have each
// capability it lacks.
func lacks(o Options) map[string]string {
	l := map[string]string{
		"dedupe-window":      "RabbitMQ has no producer de-dupe by message id inside a window: a re-published message is a new message (a stream de-dupes by producer name and publishing id, with no window: BR-7.5)",
		"nak-delay":          "basic.nack with requeue puts the message back at once: RabbitMQ has no delayed requeue",
		"in-progress":        "RabbitMQ has no in-progress: a delivery's consumer_timeout counts from the delivery, for the whole node, and cannot be pushed back",
		"pending-list":       "RabbitMQ shows a queue's unacknowledged count, not a readable list of pending deliveries with counters (x-delivery-count comes with the redelivery)",
		"trim":               "the adapter does not trim: a quorum queue's length limit drops or refuses, a stream is cut by its retention",
		"producer-sessions":  "RabbitMQ has no idempotent producer session: publisher confirms say what the broker took, they do not de-dupe a retry",
		"lost-produce-reply": "RabbitMQ has no idempotent producer session whose retries a lost confirm would test",
		"group-offsets":      "a RabbitMQ queue removes what is acked; there is no committed offset to read or reset (streams have offsets, read by the stream protocol's consumers)",
		"inspect":            "certification (BR-6.1) reads a team's own RabbitMQ read-only (the queues a profile declares, through the management API): give a profile and the server's address, tck run --profile FILE --target broker/rabbitmq=amqp://USER:PASSWORD@HOST:5672/VHOST",
		"fault-proxy":        "the kit has no AMQP-aware fault proxy for RabbitMQ",
		"broker-restart":     "the kit cannot restart a RabbitMQ server it did not start",
	}
	if o.StreamURL == "" {
		l["stream-dedupe"] = "a RabbitMQ stream de-dupes by producer name and publishing id over the stream protocol, whose port the kit knows only on a server of its own (rabbitmq_stream enabled there)"
	}
	if o.ConsumerTimeout <= 0 {
		why := "RabbitMQ redelivers an unacknowledged delivery only when its channel closes: on connection loss, or when the node's consumer_timeout (default 30 min, node-wide, not readable over AMQP) closes the channel; the kit sets it only on a server of its own"
		l["ack-wait"] = why
		l["consumer-timeout"] = why
	}
	return l
}

// RunLocal binds the kit to a rabbitmq-server of its own from PATH with
// consumer_timeout at WithAckWait's. RabbitMQ boots in several seconds on a
// core's worth of processor, so the RunLocal calls of one process share one
// node while any of them runs (per consumer_timeout): each target names
// everything it declares with its own run (namePrefix), and the last Stop
// stops the node. A rule that restarts a server (BR-3.1) gets a node of
// its own, started when it asks. Stop ends every server it started.
func RunLocal(ctx context.Context, opts ...Option) (*Target, error) {
	st := options.Apply(opts)
	client, ackWait := st.client, st.ackWait
	lc := localConfig{consumerTimeout: ackWait}
	// The run's server has the management API (BR-6.1 reads queue
	// arguments through it); a rule's restartable one does not need it.
	main := lc
	main.management = true
	l, release, err := acquireShared(ctx, main)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var owned []*local
	stopAll := func() error {
		mu.Lock()
		defer mu.Unlock()
		errs := []error{release()}
		for _, o := range owned {
			errs = append(errs, o.stop())
		}
		owned = nil
		return errors.Join(errs...)
	}
	client.Options.ConsumerTimeout = ackWait
	client.Options.StreamURL = l.streamURL
	t, err := newTarget(ctx, l.url, client, stopAll)
	if err != nil {
		return nil, errors.Join(err, stopAll())
	}
	delete(t.Lacks, "broker-restart")
	t.Management = l.mgmtURL
	t.Private = func(ctx context.Context) (*OwnServer, error) {
		o, err := startLocal(ctx, lc)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		owned = append(owned, o)
		mu.Unlock()
		return &OwnServer{l: o, client: t.Client}, nil
	}
	t.Address = fmt.Sprintf("local %s (node %s, a child process of the kit, pid %d, shared by the kit's RabbitMQ targets of this process) at amqp://127.0.0.1:%d/", ServerBinary, l.node, l.proc.Pid(), l.port)
	t.Config["restartable"] = "true"
	t.Config["namedProducers"] = "over the stream protocol (rabbitmq_stream, its own loopback port) into the topic's stream: producer name and publishing id"
	t.Version += " (local child process)"
	t.Notes = append(t.Notes, "a "+ServerBinary+" the kit started from PATH on loopback ports (AMQP, distribution, the management API, an epmd of its own), with its own node name, Erlang cookie and data folder in a temporary folder removed when the run ends; the kit's other RabbitMQ targets of the same run share it, each under its own name prefix",
		fmt.Sprintf("consumer_timeout %s on that node (the rules' ack wait), checked every 50 ms (channel_tick_interval)", ackWait))
	return t, nil
}

// sharedNodes holds the nodes RunLocal calls share, by consumer_timeout. It is
// filled only by RunLocal and emptied by the last Stop of each node.
var sharedNodes = struct {
	sync.Mutex
	nodes map[time.Duration]*sharedNode
}{nodes: map[time.Duration]*sharedNode{}}

type sharedNode struct {
	l    *local
	refs int
}

// acquireShared returns the running shared node for lc, starting one when
// there is none (or it died), and the release that stops it after its
// last user. Callers wait while a node boots: they would share it anyway.
func acquireShared(ctx context.Context, lc localConfig) (*local, func() error, error) {
	sharedNodes.Lock()
	defer sharedNodes.Unlock()
	key := lc.consumerTimeout
	n := sharedNodes.nodes[key]
	if n == nil || !n.l.proc.Running() {
		l, err := startLocal(ctx, lc)
		if err != nil {
			return nil, nil, err
		}
		n = &sharedNode{l: l}
		sharedNodes.nodes[key] = n
	}
	n.refs++
	return n.l, sync.OnceValue(func() error {
		sharedNodes.Lock()
		defer sharedNodes.Unlock()
		if n.refs--; n.refs > 0 {
			return nil
		}
		if sharedNodes.nodes[key] == n {
			delete(sharedNodes.nodes, key)
		}
		return n.l.stop()
	}), nil
}
