package kafka

import "github.com/onceproof/tck/internal/mqx"

// The kit's optional broker vocabulary (internal/mqx) this adapter's
// exported methods return, re-exported under the adapter's name: the
// contract an outside broker author implements (mq) does not include it.
type (
	// Producer is one producer session (Broker.Producer).
	Producer = mqx.Producer
	// TopicInfo is a topic as the Inspector reads it back.
	TopicInfo = mqx.TopicInfo
	// ConsumerInfo is a consumer group as the Inspector reads it back.
	ConsumerInfo = mqx.ConsumerInfo
	// ServerInfo is the server's version and settings as the Inspector reads them.
	ServerInfo = mqx.ServerInfo
	// AckPolicy is how a consumer group acknowledges (ConsumerInfo.AckPolicy).
	AckPolicy = mqx.AckPolicy
)
