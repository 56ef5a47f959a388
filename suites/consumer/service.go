package consumer

import (
	"crypto/tls"
	"time"
)

// Service is a consumer service the kit runs as its own process and checks
// as a black box (Target.Service): it reads a durable consumer the kit
// creates on an embedded NATS JetStream server of the rule's own (or a
// stream key and consumer group on the team's broker, Broker), keeps its
// state in a data directory of its own, writes to sinks that are HTTP
// services of the kit's, and acks through a proxy of the kit's in front of
// the broker. The kit kills it with SIGKILL at points it sees from outside
// (a sink call arriving, before or after it is applied; an ack reaching the
// broker, before or after it is forwarded) and starts it again with the
// same configuration. docs/consumer-service.md is the contract: the
// environment, the event envelope, the sink APIs.
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
	// Envelope is the shape of every event the kit publishes to the
	// service (the zero value: the documented envelope).
	Envelope Envelope
	// Workers is how many replicas run at once (default 2), sharing the
	// data directory as replicas share a database.
	Workers int
	// Keep keeps each rule's data directory (its path is in the evidence).
	Keep bool
	// Concurrent is how many rules run against the service at once, each
	// with replicas, a data directory and a stream of its own (default 1:
	// a service may keep state the kit does not give it, a port or a
	// database of the team's, which rules at once would share). The kit's
	// own reference services run 3.
	Concurrent int
	// AckWait (real) is declared on the durable consumer the kit creates
	// (default 2 s).
	AckWait time.Duration
	// MaxDeliver is declared on that consumer too (default 20).
	MaxDeliver int
	// Ready (real) bounds a start until the service pulls from its
	// consumer (default 60 s).
	Ready time.Duration
	// Settle (real) bounds each step until every message of it is acked
	// (default 30 s).
	Settle time.Duration
	// Broker is the server each rule's stream is created on (the zero
	// value: an embedded NATS JetStream server of the rule's own).
	Broker ServiceBroker
}

// ServiceBroker is a team's broker server a service reads through the
// kit's proxy (tck run --broker): each rule creates its scratch stream
// there and removes it at its end.
type ServiceBroker struct {
	// Kind is "nats" (JetStream: a stream and a durable pull consumer) or
	// "redis" (Redis Streams: a stream key and a consumer group) or
	// "kafka" (a one-partition topic whose offsets the service commits
	// under a group; one replica, no ack wait) or "kafka-share" (a
	// one-partition topic read by a share group: its lock is the ack wait,
	// its delivery limit the max deliver).
	Kind string
	// URL reaches the server, credentials included (never shown); for
	// Kafka, the bootstrap host:port list, comma-separated.
	URL string
	// Name is how the evidence names the server (no credentials).
	Name string
	// Lock and DeliveryLimit are a share group's
	// group.share.record.lock.duration.ms and
	// group.share.delivery.count.limit (Kind "kafka-share").
	Lock          time.Duration
	DeliveryLimit int
	// TLS is the run's trust material for a TLS server (tls://, rediss://):
	// the kit's proxies speak TLS to the server with it, plain text to the
	// service. nil: none (the system's roots where TLS is asked for).
	TLS *tls.Config
}

// Envelope says where a service's events carry the kit's fields: each is a
// dotted JSON path of object keys into the payload ("meta.id") or
// "header:NAME" (a NATS header holding the text; a version in decimal).
// The zero Envelope is the kit's documented envelope
// ({"eventId","messageId","version","body"}, docs/consumer-service.md).
// Whatever the envelope, Nats-Msg-Id is the kit's broker id and the
// onceproof-event-id header the event id. A profile's consumers[].envelope
// is one (docs/profile.md).
type Envelope struct {
	// MessageID locates the message id; always given in a mapped envelope.
	MessageID string
	// Version locates the business version; always given in a mapped envelope.
	Version string
	// EventID locates the event id ("": not in the event).
	EventID string
	// Body locates the body ("": not in the event).
	Body string
}
