package catalog

// Capabilities of a broker with RabbitMQ's publisher confirms and queues. A
// rule needing one the target does not declare is not-applicable, naming it.
const (
	// CapBrokerMandatory: a mandatory publish nothing routes comes back to
	// the producer (RabbitMQ basic.return) before its confirm.
	CapBrokerMandatory Capability = "mandatory-return"
	// CapBrokerPublishNack: the broker can refuse a publish with a negative
	// confirm (RabbitMQ basic.nack; the kit makes a queue refuse with
	// x-overflow reject-publish).
	CapBrokerPublishNack Capability = "publish-nack"
	// CapBrokerDeadLetter: a queue with a delivery limit dead-letters the
	// message it gives up on to a declared exchange the kit can read.
	CapBrokerDeadLetter Capability = "dead-letter"
	// CapBrokerConsumerTimeout: the server closes the channel of a member
	// that holds a delivery past its timeout and redelivers what it held
	// (RabbitMQ consumer_timeout, set by the kit on a server of its own).
	CapBrokerConsumerTimeout Capability = "consumer-timeout"
	// CapBrokerStreamDedupe: a named producer's publishes carry a sequence
	// the broker de-dupes by, with no window and across a producer restart
	// (RabbitMQ streams: producer name and publishing id).
	CapBrokerStreamDedupe Capability = "stream-dedupe"
)

const (
	srcRabbitConfirms = "RabbitMQ docs, Consumer Acknowledgements and Publisher Confirms (for an unroutable mandatory message basic.return is sent before basic.ack; basic.nack when the broker cannot take responsibility for a message)"
	srcRabbitQuorum   = "RabbitMQ docs, Quorum Queues: poison message handling (x-delivery-limit; the delivery count grows on every return; past the limit the message is dropped or dead-lettered)"
	srcRabbitDLX      = "RabbitMQ docs, Dead Letter Exchanges (a message returned more times to a quorum queue than its delivery-limit is dead-lettered; the x-death header records queue, reason and count)"
	srcRabbitTimeout  = "RabbitMQ docs, Consumers: delivery acknowledgement timeout (consumer_timeout; the channel is closed with PRECONDITION_FAILED and its unacknowledged deliveries are requeued)"
	srcRabbitStream   = "RabbitMQ docs, Streams: deduplication (a named producer's publishing ids; the broker keeps the highest per name and drops lower ones, across a producer restart that queries it)"
	srcRabbitMaxLen   = "RabbitMQ docs, Queue Length Limit (x-overflow reject-publish: with publisher confirms the publisher is informed of the rejection with a basic.nack)"

	// The seed's first hop, for RabbitMQ's confirm.
	contractRabbitConfirm = "broker 是否按配置接纳 E9 是一跳确认；某一层确认成功不会自动使后续层成功。RabbitMQ 的 publisher confirm 是“已处理”：无法路由的 mandatory 消息先以 basic.return 退回，随后仍得到 basic.ack。"
)

func init() {
	Add(
		br("BR-7.1", Must, Requirement, "RabbitMQ: a mandatory publish nothing routes is returned and never reported as stored, although its confirm is positive",
			contractRabbitConfirm+" The kit publishes on the topic's exchange under a routing key nothing binds: the client must report the basic.return (an error wrapping mq.ErrReturned), never a stored position, and the topic must not hold it.",
			srcAckWords+"; "+srcRabbitConfirms, CapBrokerMandatory),
		br("BR-7.2", Must, Requirement, "RabbitMQ: a publish the broker nack'd is not a stored message",
			"broker 是否按配置接纳 E9 是一跳确认；生产者只看到超时或拒绝时，不能断言 E9 已进入流。 The kit fills a queue that refuses overflow (x-overflow reject-publish): every publish the client reports stored must be delivered from the queue, and the ones the broker refused (basic.nack) must be reported refused (mq.ErrNacked), never stored.",
			srcLostAck+"; "+srcRabbitConfirms+"; "+srcRabbitMaxLen, CapBrokerPublishNack),
		br("BR-7.3", Must, Requirement, "RabbitMQ: a message that reaches the quorum queue's delivery limit goes to the declared dead-letter exchange, never silently dropped",
			"具体重试次数要按所选产品版本与配置核对。 A group with max-deliver N has a quorum queue with x-delivery-limit N-1 and a dead-letter exchange: after N deliveries, each nack'd with requeue, the message must not be delivered again and must be readable in the dead-letter queue with x-death reason delivery_limit.",
			srcAckWords+"; "+srcRabbitQuorum+"; "+srcRabbitDLX, CapBrokerDeadLetter, CapBrokerMaxDeliver),
		br("BR-7.4", Must, Requirement, "RabbitMQ: a delivery held past consumer_timeout is redelivered, and the holder's late ack is not reported confirmed",
			"写索引→ACK：broker 尚未记录 ACK，W1 崩溃或超时，ACK 等待到期后可能重投 W1/W2；若 ACK 请求本身丢失，W1 也可能不知道 broker 是否已记录。 On RabbitMQ the wait is the node's consumer_timeout: the server closes the holder's channel and requeues the delivery; the holder's ack after that must fail, and the message must come back with its attempt one higher.",
			srcCrashAck+"; "+srcRabbitTimeout, CapBrokerConsumerTimeout),
		br("BR-7.5", Must, Requirement, "RabbitMQ: a stream de-dupes by producer name and publishing id across a producer restart, with no window",
			"若生产者每次重试都生成新 event_id，broker 可能把同一变化写成多条事件；因此要固定事件身份并核对发布结果。 On a RabbitMQ stream the identity is the producer's name and the publishing id: producer p stores ids 1 to 3 and restarts; the new p re-sends 2 and 3 and sends 4: the stream must hold each of the four once. A producer whose name changes on a restart loses the de-dupe.",
			srcLostAck+"; "+srcRabbitStream, CapBrokerStreamDedupe),
	)
}
