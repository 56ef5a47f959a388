// Package co is the consumer contract the CO rules check: the event a
// consumer handles, its delivery and how it settles it, the instance and its
// factory, and the side-effect sinks it writes through (a search index, a
// notifier without an idempotency key, a durable store for its own de-dupe
// records, and the clock every lifetime is read on). A consumer author
// implements Consumer and a Factory against these types and checks them with
// consumer.Check (package suites/consumer); the kit provides and observes
// the sinks. An outbox plugs in as an Outbox.
package co

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/onceproof/tck/mq"
)

// Event is what the kit publishes to the broker and a consumer handles. The
// event id is stable for one (message, version): a redelivery and a replay
// carry the same one; an edit carries a new one (seed 002, 四: evt:m-9:v1,
// evt:m-9:v2).
type Event struct {
	EventID   string `json:"eventId"`   // stable for one (message, version): EventID(MessageID, Version)
	MessageID string `json:"messageId"` // the business message
	Version   int    `json:"version"`   // its business version, from 1
	Body      string `json:"body"`      // what the effects carry
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
	// Event is the event delivered.
	Event() Event
	// Attempt counts this event's deliveries to the consumer group, from 1.
	Attempt() int
	// Ack settles the delivery as done.
	Ack(ctx context.Context) error
	// Nak hands the delivery back, to come again after delay (kit clock).
	Nak(ctx context.Context, delay time.Duration) error
}

// Consumer is one instance of the consumer under test. The kit calls Handle
// from one goroutine per delivery; two workers run two instances at once.
// Every side effect goes through the Env the instance was built with.
type Consumer interface {
	// Handle performs d's effects and settles it.
	Handle(ctx context.Context, d Delivery) error
}

// Reconciler is implemented by a consumer that can restore effects lost to
// an ack that came before them (seed 002, 三: 除非另有对账/重建). The kit calls
// it on a fresh instance after such a crash and checks the effect is back.
type Reconciler interface {
	// Reconcile restores every effect an acked event should have had.
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
	Worker string // worker and instance, e.g. "W2#5"
	// Rule is the id of the rule this instance runs under, e.g. "CO-1.2".
	// Message ids are already unique to one rule and run, so a consumer
	// with state of its own (a table, a cache) needs no reset between
	// rules; Rule lets it keep that state apart, or name it, if it wants.
	Rule     string
	Index    Index    // the search index
	Notifier Notifier // the push notifier
	Store    Store    // the instance's handle on its durable store
	Clock    Clock    // the kit's clock
}

// ErrEnded is what every call of an instance returns once the kit has
// ended it (a crash): the ack, the nak and every sink call. The kit ends an
// instance by cancelling the context it was built and called with, closing
// its broker connection and store handle, and refusing its further calls
// (recorded as "after death"); it never panics through the consumer's
// goroutines, so a consumer that does its work in goroutines of its own is
// crashed the same way. A consumer needs no special handling: it sees an
// error and returns.
var ErrEnded = errors.New("onceproof: this consumer instance was ended by the kit (a crash); its calls are refused")

// Factory builds a new instance. The kit calls it at start and after every
// crash; an instance must keep nothing it needs across crashes anywhere but
// in env.Store (and the sinks). ctx ends when the instance is ended.
type Factory func(ctx context.Context, env Env) (Consumer, error)

// Declared is what the consumer says about itself.
type Declared struct {
	// Scopes are the side-effect scopes the consumer performs for every
	// event: ScopeIndex, ScopeNotify or both.
	Scopes []string
	// DedupeLifetime is how long its de-dupe records live (0: forever).
	DedupeLifetime time.Duration
}

// Publisher is what an outbox relay (or a broken writer) publishes through;
// the kit wraps the broker's Publish to crash around it.
type Publisher interface {
	// Publish puts m on topic, as mq.Broker's Publish does.
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

// Clock is the time a consumer must use for anything that expires (de-dupe
// record lifetimes, claim leases). The kit runs it faster than real time so
// that the contract's minutes fit in a test run.
type Clock interface {
	// Now is the kit's time now.
	Now() time.Time
}

// Scope names of the two side effects the kit observes.
const (
	ScopeIndex  = "search-index"
	ScopeNotify = "notify"
)

// Doc is one search-index document. ID is the stable document id, which the
// kit requires to be the message id; Version is the business version of the
// event that produced it.
type Doc struct {
	ID      string `json:"id"`      // the message id
	Version int    `json:"version"` // the event's version
	Body    string `json:"body"`    // the event's body
}

// Index is the search index as a consumer sees it. Like any remote call, a
// write can fail: with an error before it took effect, or with a timeout
// after it took effect (the answer was lost: seed 002, 一, 回包丢失又会让调用方对已发生的成功保持未知).
// Either way the consumer cannot count the effect as done; the kit checks
// the delivery comes back and the effect ends up there exactly once.
type Index interface {
	// Put writes doc whatever is stored (an unconditional write).
	Put(ctx context.Context, doc Doc) error
	// Upsert writes doc only if the stored document is absent or has a
	// lower version, atomically (seed 002, 四: the version comparison and
	// the write are one condition of the index, not a read then a write).
	// applied says whether it wrote.
	Upsert(ctx context.Context, doc Doc) (applied bool, err error)
	// Get reads the stored document.
	Get(ctx context.Context, id string) (Doc, bool, error)
}

// Notification is one visible notification about a message version.
type Notification struct {
	MessageID string `json:"messageId"` // the message it is about
	Version   int    `json:"version"`   // and its version
	Text      string `json:"text"`      // what the user sees
}

// Notifier stands for a push service that has no idempotency key: every
// Send is one more notification a user sees (seed 002, 四: 重复发送可能造成两个
// 可见通知). What it does offer is a query by key, so a consumer that lost
// track of a send (it crashed after it, or the answer timed out) can find
// out. A Send fails like an index write: an error before, or a timeout after
// the notification went out.
type Notifier interface {
	// Send sends n: one more notification a user sees.
	Send(ctx context.Context, n Notification) error
	// Sent counts the notifications sent so far for (messageID, version).
	Sent(ctx context.Context, messageID string, version int) (int, error)
}

// Record is one stored value and when it expires on the kit's clock (zero:
// never).
type Record struct {
	Value   string    `json:"value"`   // what was stored
	Expires time.Time `json:"expires"` // when it expires (zero: never)
}

// Store is a durable key-value store a consumer may keep its de-dupe records
// in. It survives the consumer's restarts (each instance opens its own handle
// on the same file). Expiry is read on the kit's clock; an expired record is
// absent to every call. ttl 0 means the record never expires.
type Store interface {
	// Get reads the live record of key.
	Get(ctx context.Context, key string) (Record, bool, error)
	// Insert stores the record only if the key is absent (or expired),
	// atomically; inserted says whether it did. This is the one call that
	// lets two workers agree on who does an effect.
	Insert(ctx context.Context, key, value string, ttl time.Duration) (inserted bool, err error)
	// Put stores the record whatever is there.
	Put(ctx context.Context, key, value string, ttl time.Duration) error
	// CompareAndSwap replaces the value only if the live record holds old.
	CompareAndSwap(ctx context.Context, key, old, value string, ttl time.Duration) (bool, error)
	// Delete removes the record of key.
	Delete(ctx context.Context, key string) error
}
