package catalog

// Capabilities of a broker target. A rule needing one the target does not
// declare is not-applicable, naming it.
const (
	CapBrokerDedupe     Capability = "dedupe-window"  // producer de-dupe by message id within a window
	CapBrokerAckWait    Capability = "ack-wait"       // unacknowledged deliveries come back by themselves
	CapBrokerNakDelay   Capability = "nak-delay"      // nak with a redelivery delay
	CapBrokerTerm       Capability = "term"           // stop redelivery of one message for good
	CapBrokerMaxDeliver Capability = "max-deliver"    // a limit on delivery attempts
	CapBrokerInProgress Capability = "in-progress"    // push a delivery's deadline back
	CapBrokerRestart    Capability = "broker-restart" // the kit can restart a broker of its own
	CapBrokerFaultProxy Capability = "fault-proxy"    // the kit can put its TCP proxy before the broker
)

const (
	seedBR       = "seeds/002 确认、重投与去重"
	srcLostAck   = seedBR + ", 二、生产者回包丢失"
	srcCrashAck  = seedBR + ", 三、消费者 ACK 前后都有崩溃窗口"
	srcAckWords  = seedBR + ", 六、broker 各有自己的确认词"
	srcNATSDedup = "NATS docs, JetStream model deep dive: message deduplication (Nats-Msg-Id, Duplicates window)"
	srcNATSCons  = "NATS docs, JetStream consumers: AckWait, MaxDeliver, BackOff, ack/nak/term/in-progress"
	srcNATSStore = "NATS docs, nats-server config: jetstream sync_interval (default 2m), sync_interval: always"

	contractDedupe = "NATS JetStream Nats-Msg-Id：配置去重窗内识别同发布 ID。若生产者每次重试都生成新 event_id，broker 可能把同一变化写成多条事件；因此要固定事件身份并核对发布结果。"
	contractBranch = "从同一次首次发布出发的两条独立分支：A 首次发布后 4 分钟（窗内）仍用 evt:m-9:v1，可被 broker 识别为重复，不另追加 E9；B 首次发布后 6 分钟（窗外），有再次追加 E9 的风险。这样不依赖重复命中是否刷新窗口的具体实现。"
	contractAck    = "NATS JetStream Consumer ACK/AckWait：未按策略 ACK 可在等待期后重投；若 ACK 请求本身在网络中丢失，W1 也可能不知道 broker 是否已记录，仍需允许后来重投。"
)

func br(id string, level Level, kind Kind, title, contract, source string, needs ...Capability) Rule {
	return Rule{ID: id, Suite: "broker", Level: level, Kind: kind, Title: title, Contract: contract, Source: source, Needs: needs}
}

func init() {
	Add(
		br("BR-1.1", Must, Requirement, "a publish repeated with the same id inside the de-dupe window is stored once",
			contractDedupe+" The second reply says duplicate or returns the first position.", srcLostAck+"; "+srcNATSDedup, CapBrokerDedupe),
		br("BR-1.2", Must, Characterization, "the effective de-dupe window is measured and lies within the declared window plus a stated tolerance",
			"NATS 的发布去重窗是可配置的滑动窗口（Duplicates）；具体重复检测要按所选产品版本与配置核对。 The kit finds the moment the same id is stored again and compares it with the declared window.", srcAckWords+"; "+srcNATSDedup, CapBrokerDedupe),
		br("BR-1.3", Must, Requirement, "two branches from one first publish: a retry at 0.8 of the window is dropped, at 1.2 of the window it is stored again",
			contractBranch, srcLostAck, CapBrokerDedupe),
		br("BR-1.4", Should, Characterization, "whether a duplicate hit refreshes the window is measured and matches the declaration",
			"两条独立分支“不依赖重复命中是否刷新窗口的具体实现”；该实现细节须实测并与目标的声明核对（NATS：命中不刷新窗口）。", srcLostAck+"; "+srcNATSDedup, CapBrokerDedupe),
		br("BR-1.5", Must, Requirement, "identity is the id, not the content",
			"NATS JetStream 按 ID 判断重复，不靠消息正文自动识别同一业务意图：不能外推为“内容相同自动识别”。 Two ids with equal payloads are both stored; one id with a changed payload is dropped and the first payload kept.", srcLostAck+"; "+srcAckWords, CapBrokerDedupe),
		br("BR-1.8", Must, Requirement, "distinct ids are never taken for one another: ids that differ only in case, in percent-encoding, in a wildcard character, in Unicode normalisation, in a 32-bit hash or after a long shared prefix are each stored",
			"NATS JetStream 按 ID 判断重复，不靠消息正文自动识别同一业务意图。 The id is compared as it is: a client or broker that folds case, decodes, normalises, hashes or cuts ids drops a distinct intent as a duplicate of another, inside the window, and it is lost. The kit publishes the same id twice as a control, then six such pairs.", srcLostAck+"; "+srcNATSDedup, CapBrokerDedupe),
		br("BR-1.6", Must, Requirement, "publish ack lost: a retry with the same id leaves one copy, a fresh id leaves two",
			"broker 已存下 E9，但答复在返程丢失；生产者只看到超时，不能断言 E9 没进入流。若生产者每次重试都生成新 event_id，broker 可能把同一变化写成多条事件。", srcLostAck, CapBrokerDedupe, CapBrokerFaultProxy),
		br("BR-1.7", Should, Characterization, "the de-dupe state after a broker restart inside the window is measured, for limits and work-queue retention",
			"具体持久、保留、重复检测都要按所选产品版本与配置核对。 The kit restarts the broker inside the window, retries the same id, and compares what it measures with what the target declares.", srcAckWords, CapBrokerDedupe, CapBrokerRestart),

		br("BR-2.1", Must, Requirement, "an unacknowledged delivery comes back after the ack wait and not before, its attempt number one higher",
			contractAck, srcCrashAck+"; "+srcNATSCons, CapBrokerAckWait),
		br("BR-2.2", Must, Requirement, "a confirmed ack stops redelivery for several ack waits",
			"Consumer ACK：broker 记录 ACK 后认为该次处理已完成（ACK→写索引时序中“broker 认为该次处理已完成”）。", srcCrashAck+"; "+srcNATSCons, CapBrokerAckWait),
		br("BR-2.3", Must, Requirement, "a consumer that dies before acking has its delivery redelivered to another member of the group",
			"写索引→ACK：搜索索引已更新，broker 尚未记录 ACK，W1 崩溃；ACK 等待到期后可能重投 W1/W2，重复处理。 (Redelivered by the ack wait, or on Kafka by the rebalance: the partition's new owner reads from the committed offset.)", srcCrashAck, CapBrokerCrashRedelivery),
		br("BR-2.4", Must, Requirement, "nak redelivers, one attempt higher, and nak with a delay not before the delay",
			"具体重试次数/间隔要按所选产品版本与配置核对。 A negative acknowledgement asks for redelivery; with a delay, not before it.", srcAckWords+"; "+srcNATSCons, CapBrokerNakDelay),
		br("BR-2.5", Must, Requirement, "term stops redelivery for good",
			"Term tells the server to stop redelivering the message regardless of MaxDeliver; an application uses it for a message it can never process.", srcNATSCons, CapBrokerTerm),
		br("BR-2.6", Must, Requirement, "max-deliver is honoured, each delivery one attempt higher, and the broker's signal for it is observed",
			"具体重试次数要按所选产品版本与配置核对。 No delivery beyond MaxDeliver, and the server's max-deliveries advisory is published.", srcAckWords+"; "+srcNATSCons, CapBrokerMaxDeliver),
		br("BR-2.7", Should, Requirement, "in-progress pushes the redelivery deadline back and is not counted as a delivery",
			"AckWait 是消费者在未收到确认时尝试重投的机制；in-progress (+WPI) resets the ack wait timer for a delivery still being worked on.", srcCrashAck+"; "+srcNATSCons, CapBrokerInProgress),
		br("BR-2.8", Must, Characterization, "an ack is not a delete under limits retention; under work-queue retention the ack removes it",
			"Redis Stream 的 XACK 移除 PEL 中的引用，不等于自动删除 Stream 条目；各 broker 的确认词不能跨产品替换。 Measured per retention and compared with the declared retention.", srcAckWords+"; "+srcCrashAck),
		br("BR-2.9", Must, Requirement, "no acked message is lost: total-queue check over >= 1000 messages with naks, crashes and reconnects",
			"选择先完成可幂等副作用，再按 broker 协议 ACK，接受可能重投。 Every acknowledged publish is delivered and acknowledged at least once; nothing unpublished is delivered; duplicates are counted, not failed.", srcCrashAck),
		br("BR-3.1", Must, Characterization, "acknowledged publishes survive a broker restart; the sync setting is read and a lossy one is named",
			"broker 是否按配置接纳 E9 是一跳确认；具体持久要按所选产品版本与配置核对。 Acked publishes are all readable after a graceful (and, where possible, abrupt) restart; a sync setting that can lose acked writes on power loss is a hazard.", srcAckWords+"; "+srcNATSStore, CapBrokerRestart),
	)
}

// CapBrokerAtomicBatch: the broker stores a batch of messages all or
// nothing, each member's message id de-duplicated (NATS 2.12 atomic batch
// publish on a stream with allow_atomic; mq.BatchPublisher).
const CapBrokerAtomicBatch Capability = "atomic-batch"

const (
	srcNATSBatch = "NATS ADR-50 JetStream Batch Publishing (Nats-Batch-Id, Nats-Batch-Sequence, Nats-Batch-Commit; all or nothing); nats-server v2.15 server/stream.go processJetStreamAtomicBatchMsg, server/jetstream_batching.go"
	// A batch is the broker-side cousin of the seed's outbox: several
	// messages of one intent that must land whole and once.
	contractBatch = "若生产者每次重试都生成新 event_id，broker 可能把同一变化写成多条事件；因此要固定事件身份并核对发布结果。 An atomic batch is one intent of several messages: it lands whole and once, or not at all."
)

func init() {
	Add(
		br("BR-8.1", Must, Requirement, "NATS: a committed atomic batch is stored whole and once, across a retry of a commit whose reply was lost and Nats-Msg-Id duplicates inside and across batches",
			contractBatch+" A committed batch's members are stored once each at consecutive sequences; the same batch retried with the same batch id and message ids after its commit reply was not seen is not stored again; a batch naming a Nats-Msg-Id twice, or one already stored inside the window, is never stored twice nor in part (nats-server refuses it whole: \"atomic publish batch contains duplicate message id\").",
			srcLostAck+"; "+srcNATSDedup+"; "+srcNATSBatch, CapBrokerAtomicBatch),
		br("BR-8.2", Must, Requirement, "NATS: a batch the publisher abandons mid-way leaves nothing stored, before and after the server's abandon timeout",
			contractBatch+" A publisher that sends part of a batch and dies (its connection closes, no commit) leaves no member readable, at once and after max_batch_timeout (default 10 s), when the server has abandoned it.",
			srcNATSBatch, CapBrokerAtomicBatch),
		br("BR-8.3", Must, Requirement, "NATS: the batch size limit is honoured: a batch of the limit is stored whole, one over it is refused whole and the publisher told",
			contractBatch+" A batch of max_batch_size members (default 1000) is stored whole; one of max_batch_size+1 is refused (\"atomic publish batch is too large\"), the publisher gets an error, and none of its members is stored.",
			srcNATSBatch, CapBrokerAtomicBatch),
	)
}
