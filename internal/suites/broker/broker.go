// Package broker is the BR rules behind the public suites/broker, with the
// whole Target the kit's own adapters fill (fault proxy, private servers,
// disruptions, lost replies, inspectors, a declared profile). An outside
// author uses suites/broker; internal/registry and the kit's tests use this.
//
// Every rule creates its own topics and consumer groups, named after the rule
// and a nonce, and deletes them afterwards, so a shared server needs no
// cleaning and is otherwise untouched.
//
// Most rules must wait (a window to pass, an ack wait to end). The waits are
// independent, so they overlap: under Register the first rule to run starts
// the workload of every rule the label filter selected, each on its own
// topics, and each spec then awaits and judges its own; under Check the rules
// run as parallel subtests, each starting its own workload.
package broker

import (
	"context"
	"errors"
	"time"

	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
)

// Factory opens a handle on the broker under test. Handles opened by one
// factory see the same topics.
type Factory func(ctx context.Context) (mq.Broker, error)

// Target is the broker under test and what the kit may do to it.
type Target struct {
	// Open opens a handle on the broker; each rule opens its own.
	Open Factory
	// Caps is what the broker declares (normally Open(...).Capabilities()).
	Caps mq.Capabilities
	// Fault, when set, lets the kit put a fault proxy between a client and
	// the broker (BR-1.6).
	Fault *Fault
	// Private, when set, starts a broker of the rule's own that the rule may
	// restart (BR-1.7, BR-3.1) without disturbing the other rules.
	Private func(ctx context.Context) (Server, error)
	// Windows are the test windows; zero values take the defaults.
	Windows Windows
	// Budget is the run's time budget: a rule whose declared window does not
	// fit in it is skipped with that reason, never shortened (default 60s).
	Budget time.Duration
	// Timeout bounds each rule (default: Budget plus a margin).
	Timeout time.Duration
	// Seed seeds the random choices of the randomized rules (BR-2.9: which
	// deliveries are nak'd and where members crash). 0 picks one. Either way
	// the seed is the figure "seed" in those rules' evidence, and a run with
	// the same seed makes the same random choices.
	Seed int64
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
	Disrupt func(ctx context.Context, rule, topic string, log Log) error
	// Lacks gives, for a capability the broker does not have, the broker's
	// own reason, keyed by the capability's name as the catalog spells it
	// (docs/RULES.md, "needs"): every rule needing it is not-applicable with
	// that reason.
	Lacks map[string]string
	// NotApplicable lists rules this target cannot run for a reason other
	// than a capability (a target that runs some rules only), each with the
	// reason; they are reported not-applicable with it and start no
	// workload.
	NotApplicable map[string]string
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
	// Declared). A rule whose wait by definition exceeds Budget is then
	// unknown, naming the wait and the limit, never skipped or shortened.
	Declared *Declared
	// Progress, when set, receives a line now and then while rules wait
	// longer than a few seconds: which rules are waiting and about how
	// long is left.
	Progress func(line string)
}

// Log is where a fault writes what it did while a rule ran: Step (a step on
// the rule's timeline, failed when err is not nil), Note (an informational
// step), Figure (a measured value in the evidence) and Notef (a line of
// explanation). Every suite's and adapter's fault takes this one interface.
type Log = verdict.Log

// ErrViolation marks an error of Target.Disrupt that is a breach of the
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
	// measured first: max(declared window, RestartFactor x that restart).
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
	// dedupeNote says where DedupeWindow came from, or why the server's
	// window could not be read (then the declared one is used).
	dedupeNote string
}

// ageTooShort: a max age under what a rule may hold a message (its judge
// reads back after the run's waits, up to the run's limit) would expire the
// rules' messages before they are judged; the timed rules' scratch topics
// then keep messages without an age limit (BR-6.1's copy keeps the age).
func (w Windows) ageTooShort(budget time.Duration) bool {
	return w.MaxAge > 0 && w.MaxAge < budget+time.Minute
}

// firstRedelivery is when an unacked first delivery comes back: the first
// back-off step, else the ack wait.
func (w Windows) firstRedelivery() time.Duration {
	if len(w.Backoff) > 0 {
		return w.Backoff[0]
	}
	return w.AckWait
}

func (w Windows) withDefaults() Windows {
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
func DefaultWindows() Windows { return Windows{}.withDefaults() }
