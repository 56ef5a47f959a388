// Package coservice is what the consumer suite and a consumer service
// agree on, without a broker's client: the environment the kit gives a
// service, the event envelope, the wire events a proxy reports (pulls,
// deliveries, acks) and the Channel a rule publishes through. The channels
// themselves, which link the brokers' clients, are internal/cochannel. The
// rules, the crashes and the sinks are the suite's (suites/consumer); the
// contract a service implements is docs/consumer-service.md.
package coservice

// The environment the kit gives a service (docs/consumer-service.md).
const (
	EnvBroker     = "ONCEPROOF_BROKER"      // which broker: BrokerNATS, BrokerRedis, BrokerKafka or BrokerKafkaShare
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
	EnvRedisURL   = "ONCEPROOF_REDIS_URL"   // Redis, through the kit's proxy (ONCEPROOF_BROKER=redis)
	EnvGroup      = "ONCEPROOF_GROUP"       // the consumer group to read (redis; kafka: the committing group; kafka-share: the share group)
)

// The values of EnvBroker.
const (
	BrokerNATS  = "nats"  // NATS JetStream: EnvNATSURL, EnvStream, EnvSubject, EnvConsumer
	BrokerRedis = "redis" // Redis Streams: EnvRedisURL, EnvStream (the stream key), EnvGroup
)

// Env lists every variable the kit gives a service, for forwarding them
// into a container by name.
var Env = []string{EnvBroker, EnvRedisURL, EnvGroup, EnvKafkaBrokers, EnvTopic, EnvNATSURL, EnvStream, EnvSubject, EnvConsumer, EnvAckWait, EnvMaxDeliver,
	EnvDataDir, EnvIndexURL, EnvNotifyURL, EnvWorker, EnvRule}

// Event is one thing the proxy saw a replica do or receive.
type Event struct {
	Worker    string
	Conn      int    // the proxy connection (one per process run, usually)
	Kind      string // Pull, Deliver, Ack, Nak, Term, Progress
	Seq       uint64 // stream sequence (deliveries and acknowledgements)
	Delivered int    // the delivery count the broker stated
}

// Kinds of wire events.
const (
	Pull     = "pull"     // a pull request for the consumer
	Deliver  = "deliver"  // the broker handed a message to the replica
	Ack      = "ack"      // +ACK (or an empty ack, or +NXT)
	Nak      = "nak"      // -NAK
	Term     = "term"     // +TERM
	Progress = "progress" // +WPI
)

// Stage is where the hook runs: before the frame is forwarded, or after.
type Stage int

// The two stages.
const (
	BeforeForward Stage = iota
	AfterForward
)

// Hook sees each event twice, before and after forwarding; before, it may
// hold the frame (block) or drop it (return false).
type Hook func(ev Event, st Stage) (forward bool)
