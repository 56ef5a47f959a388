package consumer

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/sinks"
)

// Event is what the kit publishes to the broker and a consumer handles. The
// event id is stable for one (message, version): a redelivery and a replay
// carry the same one; an edit carries a new one (seed 002, 四: evt:m-9:v1,
// evt:m-9:v2).
type Event struct {
	EventID   string `json:"eventId"`
	MessageID string `json:"messageId"`
	Version   int    `json:"version"`
	Body      string `json:"body"`
}

// EventID is the stable event id of (message, version).
func EventID(messageID string, version int) string {
	return fmt.Sprintf("evt:%s:v%d", messageID, version)
}

// NewEvent builds the event for (message, version) with a body derived from both.
func NewEvent(messageID string, version int) Event {
	return Event{EventID: EventID(messageID, version), MessageID: messageID, Version: version,
		Body: fmt.Sprintf("%s at version %d", messageID, version)}
}

// HeaderEventID carries the event id beside the payload, so a broker's
// read-back shows it without decoding.
const HeaderEventID = "onceproof-event-id"

// Message is the broker message carrying e under the broker message id
// brokerID (the event id itself, or a distinct id for a copy the kit wants
// past the broker's own de-dupe, such as a replay).
func Message(e Event, brokerID string) mq.Message {
	b, _ := json.Marshal(e)
	return mq.Message{ID: brokerID, Payload: b, Headers: map[string]string{HeaderEventID: e.EventID}}
}

// Decode reads an event from a broker message's payload.
func Decode(payload []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(payload, &e); err != nil {
		return Event{}, fmt.Errorf("not a kit event: %w", err)
	}
	if e.EventID == "" || e.MessageID == "" || e.Version <= 0 {
		return Event{}, fmt.Errorf("not a kit event: %q", payload)
	}
	return e, nil
}

// Delivery is one delivery of an event to a consumer instance. The consumer
// settles it: Ack when it is done (the kit records the broker's confirmed
// ack), or Nak to have it back later (the delay is on the kit's clock, like
// every duration a consumer sees). A Handle that returns an error without
// settling is nak'ed by the kit, as a consumer framework would.
type Delivery interface {
	Event() Event
	Attempt() int
	Ack(ctx context.Context) error
	Nak(ctx context.Context, delay time.Duration) error
}

// Consumer is one instance of the consumer under test. The kit calls Handle
// from one goroutine per delivery; two workers run two instances at once.
// Every side effect goes through the Env the instance was built with.
type Consumer interface {
	Handle(ctx context.Context, d Delivery) error
}

// Reconciler is implemented by a consumer that can restore effects lost to
// an ack that came before them (seed 002, 三: 除非另有对账/重建). The kit calls
// it on a fresh instance after such a crash and checks the effect is back.
type Reconciler interface {
	Reconcile(ctx context.Context) error
}

// Env is what an instance may use. Index and Notifier stand for the external
// systems; Store is the consumer's own durable state (it survives restarts);
// Clock is the only time an instance may use for lifetimes and leases.
//
// The index document id must be the message id and its version the event's
// version; a notification names the message and version it is about. That
// is how the kit counts effects per (message, version, scope).
type Env struct {
	Worker   string // worker and instance, e.g. "W2#5"
	Index    sinks.Index
	Notifier sinks.Notifier
	Store    sinks.Store
	Clock    sinks.Clock
}

// Factory builds a new instance. The kit calls it at start and after every
// crash; an instance must keep nothing it needs across crashes anywhere but
// in env.Store (and the sinks).
type Factory func(ctx context.Context, env Env) (Consumer, error)

// Declared is what the consumer says about itself.
type Declared struct {
	// Scopes are the side-effect scopes the consumer performs for every
	// event: sinks.ScopeIndex, sinks.ScopeNotify or both.
	Scopes []string
	// DedupeLifetime is how long its de-dupe records live (0: forever).
	DedupeLifetime time.Duration
}

// Timing sets the scaled clock and the broker's windows. Durations marked
// "seed" are in the contract's units and run Scale times faster; "real" ones
// are wall-clock bounds.
type Timing struct {
	Scale             float64       // seed time per real time (default 1200: a seed minute is 50 ms)
	AckWait           time.Duration // seed: the broker's ack wait (default 2 min)
	RedeliveryHorizon time.Duration // seed: when CO-3.1 redelivers (default 11 min, the seed's t=11)
	NakDelay          time.Duration // seed: delay of the kit's nak after a Handle error (default 30 s)
	Settle            time.Duration // real: how long a step may take to be acked (default 5 s)
	HandleDeadline    time.Duration // real: a Handle call longer than this is a blocked consumer (default 2 s)
	NotifyLatency     time.Duration // real: how long a notification send takes (default 2 ms)
}

func (t Timing) withDefaults() Timing {
	if t.Scale <= 0 {
		t.Scale = 1200
	}
	if t.AckWait <= 0 {
		t.AckWait = 2 * time.Minute
	}
	if t.RedeliveryHorizon <= 0 {
		t.RedeliveryHorizon = 11 * time.Minute
	}
	if t.NakDelay <= 0 {
		t.NakDelay = 30 * time.Second
	}
	if t.Settle <= 0 {
		t.Settle = 5 * time.Second
	}
	if t.HandleDeadline <= 0 {
		t.HandleDeadline = 2 * time.Second
	}
	if t.NotifyLatency <= 0 {
		t.NotifyLatency = 2 * time.Millisecond
	}
	return t
}

// Publisher is what an outbox relay (or a broken writer) publishes through;
// the kit wraps the broker's Publish to crash around it.
type Publisher interface {
	Publish(ctx context.Context, topic string, m mq.Message) (mq.PublishAck, error)
}

// OutboxWriter commits a business change and, with it, the fact that an
// event must be published.
type OutboxWriter interface {
	// Submit stores the business row for e. inTx is called inside the
	// writer's transaction after its rows are written; an error from it
	// must roll everything back and be returned.
	Submit(ctx context.Context, e Event, inTx func() error) error
}

// OutboxRelay publishes what writers committed.
type OutboxRelay interface {
	// RelayOnce publishes every pending event and returns how many it sent.
	RelayOnce(ctx context.Context) (int, error)
}

// Outbox opens the writer and relay of one process on the local database at
// dbPath, publishing to topic through pub. The kit opens it again after a
// crash, on the same file; Close releases the handles.
type Outbox func(ctx context.Context, dbPath string, pub Publisher, topic string) (OutboxWriter, OutboxRelay, func() error, error)

// Target is what Register needs.
type Target struct {
	// Broker opens a handle on the broker deliveries come from; the kit
	// creates (and deletes) its own topics on it.
	Broker func(ctx context.Context) (mq.Broker, error)
	// New builds consumer instances.
	New      Factory
	Declared Declared
	// Outbox, when set, is the writer and relay CO-4.1 crashes.
	Outbox Outbox
	Timing Timing
	// Seed seeds the CO-5.1 schedule (0: from the time; the seed is in the evidence).
	Seed int64
	// Events is the size of the CO-5.1 schedule (default and minimum 200).
	Events int
	// Timeout bounds each rule (default spec.DefaultTimeout).
	Timeout time.Duration
}
