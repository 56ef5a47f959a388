package consumer

import (
	"context"
	"time"

	"github.com/onceproof/tck/mq"
)

// Service is a consumer service the kit runs as its own process and checks
// as a black box (Target.Service): it reads a durable consumer the kit
// creates, keeps its state in a data directory of its own, writes to sinks
// that are HTTP services of the kit's, and acks through a proxy of the
// kit's in front of the broker. The kit kills it with SIGKILL at points it
// sees from outside (a sink call arriving, before or after it is applied;
// an ack reaching the broker, before or after it is forwarded) and starts
// it again with the same configuration. docs/consumer-service.md is the
// contract: the environment, the event envelope, the sink APIs.
type Service struct {
	// Args is the service's argv (the target builds a `go run` once and
	// gives the binary here).
	Args []string
	// Dir is its working directory ("": the kit's).
	Dir string
	// Env is added to the variables the kit sets.
	Env map[string]string
	// Kill, when set, ends a run where SIGKILL of its process group cannot
	// reach (a container: `docker kill --signal KILL`); called with the
	// run's pid before that SIGKILL.
	Kill func(pid int)
	// Broker opens one rule's stream, durable consumer and proxy.
	Broker ServiceBroker
	// Envelope is the shape of every event the kit publishes to the
	// service (the zero value: the documented envelope).
	Envelope Envelope
	// Workers is how many replicas run at once (default 2), sharing the
	// data directory as replicas share a database.
	Workers int
	// Keep keeps each rule's data directory (its path is in the evidence).
	Keep bool
	// AckWait (real) and MaxDeliver are declared on the durable consumer
	// the kit creates (defaults 2 s and 20).
	AckWait    time.Duration
	MaxDeliver int
	// Ready (real) bounds a start until the service pulls from its
	// consumer (default 60 s); Settle (real) bounds each step until every
	// message of it is acked (default 30 s).
	Ready  time.Duration
	Settle time.Duration
}

// The environment the kit gives the service (docs/consumer-service.md).
const (
	EnvNATSURL    = "ONCEPROOF_NATS_URL"    // the broker, through the kit's proxy
	EnvStream     = "ONCEPROOF_STREAM"      // the stream the kit created
	EnvSubject    = "ONCEPROOF_SUBJECT"     // its subject
	EnvConsumer   = "ONCEPROOF_CONSUMER"    // the durable pull consumer to read
	EnvAckWait    = "ONCEPROOF_ACK_WAIT"    // its ack wait, as a Go duration ("2s")
	EnvMaxDeliver = "ONCEPROOF_MAX_DELIVER" // its max deliver
	EnvDataDir    = "ONCEPROOF_DATA_DIR"    // the service's own directory; it survives restarts
	EnvIndexURL   = "ONCEPROOF_INDEX_URL"   // the search index's base URL
	EnvNotifyURL  = "ONCEPROOF_NOTIFY_URL"  // the notifier's URL
	EnvWorker     = "ONCEPROOF_WORKER"      // the replica's name ("W1")
	EnvRule       = "ONCEPROOF_RULE"        // the rule being checked ("CO-2.1")
)

// ServiceBroker opens, for one rule, a fresh stream and a durable consumer
// with the declared ack wait and max deliver, and the proxy the service
// reaches the broker through.
type ServiceBroker interface {
	Open(ctx context.Context, name string, ackWait time.Duration, maxDeliver int) (Channel, error)
}

// Channel is one rule's stream, consumer and proxy.
type Channel interface {
	// Env is the broker's variables for one replica (each its own proxy
	// address, so the kit tells replicas apart on the wire).
	Env(worker string) (map[string]string, error)
	// Publish puts m on the stream and returns its stream sequence.
	Publish(ctx context.Context, m mq.Message) (seq uint64, duplicate bool, err error)
	// Outstanding reads back from the broker how many messages are not
	// yet acked (not delivered, or delivered and awaiting an ack).
	Outstanding(ctx context.Context) (int, error)
	// Watch installs the hook that sees the service's broker traffic.
	Watch(h WireHook)
	Close() error
}

// WireEvent is one thing the proxy saw a replica do or receive.
type WireEvent struct {
	Worker    string
	Conn      int    // the proxy connection (one per process run, usually)
	Kind      string // WirePull, WireDeliver, WireAck, WireNak, WireTerm, WireProgress
	Seq       uint64 // stream sequence (deliveries and acknowledgements)
	Delivered int    // the delivery count the broker stated
}

// Kinds of wire events.
const (
	WirePull     = "pull"     // a pull request for the consumer
	WireDeliver  = "deliver"  // the broker handed a message to the replica
	WireAck      = "ack"      // +ACK (or an empty ack, or +NXT)
	WireNak      = "nak"      // -NAK
	WireTerm     = "term"     // +TERM
	WireProgress = "progress" // +WPI
)

// WireStage is where the hook runs: before the frame is forwarded, or after.
type WireStage int

const (
	BeforeForward WireStage = iota
	AfterForward
)

// WireHook sees each event twice, before and after forwarding; before, it
// may hold the frame (block) or drop it (return false).
type WireHook func(ev WireEvent, st WireStage) (forward bool)
