package mq

// TopicInfo is a topic as the broker holds it, read by the broker's own
// name for it (a NATS stream name).
type TopicInfo struct {
	Name     string      `json:"name"`               // the broker's name for it
	Subjects []string    `json:"subjects,omitempty"` // what it stores (NATS subjects)
	Config   TopicConfig `json:"config"`             // its settings as held
	// Settings is every setting the broker reports for it, by the
	// broker's own name and as text (NATS: the stream configuration's
	// JSON fields), the ones Config models included.
	Settings map[string]string `json:"settings,omitempty"`
}

// AckPolicy is how a consumer group acknowledges (NATS ack_policy).
type AckPolicy string

const (
	AckExplicit AckPolicy = "explicit" // each delivery acked on its own
	AckAll      AckPolicy = "all"      // an ack covers every earlier delivery
	AckNone     AckPolicy = "none"     // acked as sent: nothing comes back
)

// ConsumerInfo is a consumer group as the broker holds it (a NATS durable
// consumer). Config.Group is its name; MaxDeliver -1 or 0 is unlimited.
type ConsumerInfo struct {
	Config    ConsumerConfig `json:"config"`    // its settings as held
	AckPolicy AckPolicy      `json:"ackPolicy"` // how it acknowledges
	// Settings is every setting the broker reports for it, by the
	// broker's own name and as text (as TopicInfo.Settings).
	Settings map[string]string `json:"settings,omitempty"`
}

// ServerInfo is what a client connection can read about the server: its
// version, and its settings as read, each with how it was read ("not
// readable by a client" when it cannot be).
type ServerInfo struct {
	Version  string            `json:"version"`  // as the server reports it
	Settings map[string]string `json:"settings"` // each setting as read
}
