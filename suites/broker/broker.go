// Package broker is the broker conformance suite: the BR rules of the catalog
// as Ginkgo specs, checked against a real broker through mq.Broker. A broker
// author plugs one in with
//
//	broker.Register(broker.Target{Open: func(ctx context.Context) (mq.Broker, error) { ... }})
//
// Every rule creates its own topics and consumer groups, named after the rule
// and a nonce, and deletes them afterwards, so a shared server needs no
// cleaning and is otherwise untouched.
//
// Most rules must wait (a window to pass, an ack wait to end). The waits are
// independent, so the suite starts every selected rule's workload at once,
// each on its own topic, and each spec then awaits and judges its own.
package broker

import (
	"context"
	"errors"
	"time"

	"github.com/onceproof/tck/internal/faultproxy"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
)

// Factory opens a handle on the broker under test. Handles opened by one
// factory see the same topics.
type Factory func(ctx context.Context) (mq.Broker, error)

// Target is what Register needs.
type Target struct {
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
	// Disrupt, when set, is a fault the target injects during BR-2.9 (a
	// cluster target kills and restarts the stream leader). The workload
	// calls it once, in its own goroutine, after a third of its publishes
	// were acknowledged, and keeps publishing and consuming while it runs;
	// it returns once the fault is healed. It notes what it did on rec (the
	// rule's timeline) and its figures on ev. An error means the fault
	// could not be applied as intended: the rule is then unknown unless it
	// failed anyway. An error wrapping ErrViolation is a breach of the rule
	// the fault exposed (a probe the target carries across the fault): the
	// rule fails with it.
	Disrupt func(ctx context.Context, rule, topic string, rec *history.Recorder, ev *verdict.Evidence) error
	// NotApplicable lists rules this target cannot run, each with the
	// reason (naming the capability it lacks); they are reported
	// not-applicable with it and start no workload.
	NotApplicable map[string]string
}

// ErrViolation marks an error of Target.Disrupt that is a breach of the
// rule seen while the fault ran, not a fault that failed to apply.
var ErrViolation = errors.New("violation seen during the fault")

// Fault is how to reach the broker through a fault proxy.
type Fault struct {
	// Addr is the broker's host:port, where the proxy forwards to.
	Addr string
	// OpenVia opens a handle that reaches the broker at addr (the proxy).
	OpenVia func(ctx context.Context, addr string) (mq.Broker, error)
	// Split cuts the broker-to-client byte stream into protocol frames.
	Split faultproxy.Splitter
	// PublishReply matches the frame carrying the broker's reply to a
	// publish on topic.
	PublishReply func(topic string) faultproxy.Match
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
	Open(ctx context.Context) (mq.Broker, error)
	// Restart stops and starts the server on the same store; it returns
	// mq.ErrUnsupported for a kind it cannot do, with the reason wrapped.
	Restart(ctx context.Context, how Restart) error
	// Sync reads the server's durability setting: how it is spelled, and
	// whether it can lose acknowledged writes on power loss.
	Sync(ctx context.Context) (setting string, canLoseAcked bool, err error)
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
