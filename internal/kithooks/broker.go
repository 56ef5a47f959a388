package kithooks

import (
	"context"
	"errors"
	"time"

	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
)

// Broker is the kit's hooks for the broker suite: what the kit may do to
// the broker under test beyond the author's suites/broker.Target.
type Broker struct {
	// Fault, when set, lets the kit put a fault proxy between a client and
	// the broker (BR-1.6).
	Fault *Fault
	// Private, when set, starts a broker of the rule's own that the rule may
	// restart (BR-1.7, BR-3.1) without disturbing the other rules.
	Private func(ctx context.Context) (Server, error)
	// Windows are the test windows; zero values take the defaults.
	Windows Windows
	// Disrupt, when set, is a fault the target injects during BR-2.9 (a
	// cluster target kills and restarts the stream leader). The workload
	// calls it once, in its own goroutine, after a third of its publishes
	// were acknowledged, and keeps publishing and consuming while it runs;
	// it returns once the fault is healed, and must return when ctx ends.
	// It writes what it did to log (the rule's timeline and evidence). An
	// error means the fault could not be applied as intended: the rule is
	// then unknown unless it failed anyway. An error wrapping ErrViolation
	// is a breach of the rule the fault exposed (a probe the target carries
	// across the fault): the rule fails with it.
	//
	// BR-3.1's fault is the restart of the rule's own server (Private).
	Disrupt func(ctx context.Context, rule, topic string, log verdict.Log) error
	// LoseProduceReply, when set, starts a producer session whose next
	// produce to topic the broker stores while its reply is lost, so the
	// client retries (BR-5.1; Kafka: kfake's request controls embedded, the
	// reply swallowed in the kit's own client connection elsewhere).
	LoseProduceReply func(ctx context.Context, topic string) (mq.Producer, LostReply, error)
	// Inspect, when set, opens a read-only view of the broker's own
	// settings (the capability "inspect"): BR-6.1 compares what is
	// declared with what the server holds.
	Inspect func(ctx context.Context) (mq.Inspector, error)
	// Declared, when set, is a team's configuration to certify (tck run
	// --profile): BR-6.1 compares it with the server's, and the other rules
	// run on scratch topics with its settings at their real durations (see
	// Declared). A rule whose wait by definition exceeds the Target's Budget
	// is then unknown, naming the wait and the limit, never skipped or
	// shortened.
	Declared *Declared
}

// ErrViolation marks an error of Broker.Disrupt that is a breach of the
// rule seen while the fault ran, not a fault that failed to apply.
var ErrViolation = errors.New("violation seen during the fault")

// Fault is how to reach the broker through the kit's fault proxy.
type Fault struct {
	// Addr is the broker's host:port, where the proxy forwards to.
	Addr string
	// OpenVia opens a handle that reaches the broker at addr (the proxy).
	OpenVia func(ctx context.Context, addr string) (mq.Broker, error)
	// Split cuts the broker-to-client byte stream into protocol frames: it
	// returns the length of the first complete frame in buf, or 0 when buf
	// does not yet hold a whole frame.
	Split func(buf []byte) int
	// PublishReply returns the match of the frame carrying the broker's
	// reply to a publish on topic.
	PublishReply func(topic string) func(frame []byte) bool
}

// Restart is how a Server is restarted.
type Restart string

const (
	// Graceful: the server is asked to stop and flushes what it holds.
	Graceful Restart = "graceful"
	// Abrupt: the server process is killed (SIGKILL) with no chance to flush.
	Abrupt Restart = "abrupt"
)

// Server is a broker a rule owns.
type Server interface {
	// Open opens a handle on the server.
	Open(ctx context.Context) (mq.Broker, error)
	// Restart stops and starts the server on the same store; it returns
	// mq.ErrUnsupported for a kind it cannot do, with the reason wrapped.
	Restart(ctx context.Context, how Restart) error
	// Sync reads the server's durability setting: how it is spelled, and
	// whether it can lose acknowledged writes on power loss.
	Sync(ctx context.Context) (setting string, canLoseAcked bool, err error)
	// Stop stops the server and releases everything it holds.
	Stop() error
}

// Windows are the durations the rules use, in real units.
type Windows struct {
	AckWait    time.Duration // default 1s
	NakDelay   time.Duration // default 500ms
	MaxDeliver int           // default 3
	// Tolerance is how far a measured moment may lie from the declared one
	// (default 250ms).
	Tolerance time.Duration
	// Messages is the size of the BR-2.9 total-queue workload (default 1000).
	Messages int
	// RestartWindow is the de-dupe window BR-1.7 tests across a restart of
	// the rule's own server. 0 (the default) chooses it from a restart
	// measured first: max(declared window, 3 x that restart).
	RestartWindow time.Duration
	// Backoff is the consumers' back-off list (nil: none): the wait after
	// delivery k is Backoff[min(k-1, len-1)], and it overrides AckWait.
	// BR-2.1 measures the first redelivery against it; the other rules'
	// consumers wait the ack wait.
	Backoff []time.Duration
	// Storage, MaxAge and Replicas are given to every topic a rule
	// creates that does not set its own (zero: the adapter's default).
	Storage  mq.Storage    // where the topics keep messages
	MaxAge   time.Duration // how long the topics keep a message
	Replicas int           // copies of each topic in a cluster
	// DedupeWindow, when set, is the de-dupe window the rules' scratch
	// topics are created with instead of the declared one
	// (Caps.DedupeWindow): under a profile certified on the team's server,
	// the window the team's stream really has there, so the BR-1 rules
	// measure the real behaviour and judge it against the declaration.
	DedupeWindow time.Duration
}

// WithDefaults is w with every zero duration and count set to its default.
func (w Windows) WithDefaults() Windows {
	if w.AckWait <= 0 {
		w.AckWait = time.Second
	}
	if w.NakDelay <= 0 {
		w.NakDelay = 500 * time.Millisecond
	}
	if w.MaxDeliver <= 0 {
		w.MaxDeliver = 3
	}
	if w.Tolerance <= 0 {
		w.Tolerance = 250 * time.Millisecond
	}
	if w.Messages <= 0 {
		w.Messages = 1000
	}
	return w
}

// DefaultWindows are the test windows a zero Windows takes.
func DefaultWindows() Windows { return Windows{}.WithDefaults() }

// LostReply is an armed lost-reply fault (Broker.LoseProduceReply).
type LostReply interface {
	// Fired says whether the fault took a produce.
	Fired() bool
	// Seen describes each produce request that reached the broker for the
	// topic since the fault was armed (the producer session and sequence
	// it carried, where the broker shows them).
	Seen() []string
	// Remove disarms it.
	Remove()
}

// Declared is a team's broker configuration to certify, as a pipeline
// profile declares it (tck run --profile): its streams and their consumers
// by the names the server knows them, every setting given (the registry
// fills in the broker's defaults for what the profile leaves out).
//
// It does two things to a run. BR-6.1 reads each declared stream and
// consumer from the server (Broker.Inspect, read only) and compares every
// setting with the declared one. And every other rule runs on scratch
// topics of its own created with the first stream's settings (de-dupe
// window, max age, storage, replicas where the server is the team's) and
// consumers with its first consumer's (ack wait, back-off, max deliver), at
// their real durations: a 60 s window is measured as a 60 s window. The
// team's own streams are only ever read.
type Declared struct {
	// Source names the declaration (the profile's file and name).
	Source string
	// Streams are the declared streams, each with its consumers.
	Streams []DeclaredStream
	// OnServer: the declared streams live on the target's server (the
	// team's own, reached by URL), so BR-6.1 reads them. Otherwise the
	// server is the kit's own and BR-6.1 checks a scratch copy with the
	// declared settings instead.
	OnServer bool
	// SetupHazards are what the kit's scratch topics cannot reproduce of
	// the declaration (replicas on a single server, an unlimited max
	// deliver); they are recorded as the kit's, not the team's.
	SetupHazards []string
	// Producers are the declared producers publishing to these streams:
	// BR-1.6's fresh-id copy is a hazard of the team's only where one of
	// them mints a fresh id per retry.
	Producers []DeclaredProducer
	// Workers are the declared application consumers' workers per broker
	// consumer ("stream/consumer"): a max_ack_pending below it stalls them.
	Workers map[string]int
	// Server are the declared server-wide settings by the server's names
	// (Redis: appendonly, appendfsync, maxmemory-policy, role,
	// connected_slaves), compared with what Inspector.Server reads.
	Server map[string]string
}

// DeclaredProducer is a producer as a profile declares it.
type DeclaredProducer struct {
	Name    string // the producer's name in the profile
	Stream  string // the stream it publishes to
	KeepsID bool   // every retry carries the first attempt's message id
	Subject string // the NATS subject it publishes to ("": not declared)
	// RetryHorizon is how long after its first attempt it may still retry
	// (Kafka: delivery.timeout.ms or its last declared retry; 0: none).
	RetryHorizon time.Duration
}

// DeclaredStream is one declared stream and its consumers.
type DeclaredStream struct {
	Topic     mq.TopicInfo      // the stream's declared settings
	Consumers []mq.ConsumerInfo // its declared consumer groups
	// ClientSide: the consumers' ack wait, back-off and max deliver are
	// the workers' own settings (Redis: XAUTOCLAIM's min-idle time), not
	// the server's, so only Settings are compared (Redis stream keys).
	ClientSide bool
	// Noun names the stream in the product's word ("stream key", "topic";
	// "": "stream key").
	Noun string
}
