package catalog

// Capabilities of a broker with Kafka's model. A rule needing one the
// target does not declare is not-applicable, naming it.
const (
	// CapBrokerCrashRedelivery: what a member held unacknowledged when it
	// died goes to another member, by an ack wait (NATS, Redis) or by a
	// rebalance (Kafka).
	CapBrokerCrashRedelivery Capability = "crash-redelivery"
	// CapBrokerProducerSessions: the producer de-dupes its own retries
	// inside one session (Kafka's idempotent producer), and the kit can
	// start a new session.
	CapBrokerProducerSessions Capability = "producer-sessions"
	// CapBrokerLostProduceReply: the kit can make the broker store a
	// produce and lose its reply, so the client retries (kfake's request
	// controls).
	CapBrokerLostProduceReply Capability = "lost-produce-reply"
	// CapBrokerGroupOffsets: a group's committed read position can be read
	// and reset (Kafka offsets).
	CapBrokerGroupOffsets Capability = "group-offsets"
)

const (
	srcKafkaIdem    = "Apache Kafka docs, producer configs: enable.idempotence (the producer id, epoch and sequence numbers; duplicates from retries are dropped)"
	srcKafkaOffsets = "Apache Kafka docs, consumer: offsets and consumer position, committed offsets, kafka-consumer-groups --reset-offsets"
	// The seed's row on Kafka (section 六) and the line under the table.
	contractKafkaRow = "Kafka 分区 offset/组进度：消费者可保存已读位置，在保留期内重读；不能外推为“offset 提交与外部索引更新自动同成同败”。"
	contractOffset42 = "Kafka 的 offset42 也不是 m-9 的业务 seq9。"
)

func init() {
	Add(
		br("BR-5.1", Must, Requirement, "Kafka: a produce retry inside one idempotent producer session leaves one record",
			"生产者发布 evt:m-9:v1，broker 已存下 E9，但答复在返程丢失；生产者只看到超时，不能断言 E9 没进入流。 With Kafka's idempotent producer the client's own retry carries the same producer id, epoch and sequence, and the broker drops it: one record, and the reply names its offset.",
			srcLostAck+"; "+srcKafkaIdem, CapBrokerProducerSessions, CapBrokerLostProduceReply),
		br("BR-5.2", Must, Characterization, "Kafka: the same payload re-sent by a new producer after a restart leaves two records; the idempotent producer is not business de-dupe",
			"生产者短窗去重只是减少重复事件，不能代替数据库业务消息主键、消费者幂等和长时间历史对账；具体重复检测都要按所选产品版本与配置核对。 A producer restarted after a lost reply gets a new producer id: its re-send of E9 is a new record. Measured and compared with what the target declares (no id-based de-dupe: two records, a hazard).",
			srcLostAck+"; "+srcAckWords+"; "+srcKafkaIdem, CapBrokerProducerSessions),
		br("BR-5.3", Must, Characterization, "Kafka: commit-then-process loses a record when the consumer dies in between; process-then-commit redelivers it after a rebalance",
			"ACK→写索引：broker 已记录 ACK，W1 尚未写索引就崩溃，索引效果可能永久遗漏；写索引→ACK：外部效果先发生，broker 尚未记录 ACK，W1 崩溃，可能重投 W1/W2，重复处理。Kafka 的 offset 提交也不会与外部搜索索引的写入自动同事务。 Both orders measured, each as a timeline with its crash point.",
			srcCrashAck+"; "+srcAckWords+"; "+srcKafkaOffsets, CapBrokerGroupOffsets, CapBrokerCrashRedelivery),
		br("BR-5.4", Must, Requirement, "Kafka: a committed offset is re-read within retention after a reset; an offset is not a business sequence",
			contractKafkaRow+contractOffset42+" After a reset of the group to a committed offset the records from there are read again, the same ones at the same offsets; an offset names a place in one partition, never m-9's seq 9.",
			srcAckWords+"; "+srcKafkaOffsets, CapBrokerGroupOffsets),
	)
}

// Kafka share groups (KIP-932): records acquired under a lock, acknowledged
// one by one, counted and archived at a limit.
const (
	// CapBrokerShareGroups: members of a Kafka share group (KIP-932). It
	// implies an ack wait (the lock) and a max-deliver (the delivery count
	// limit): the BR-9 rules need it alone, so a broker without share
	// groups names them under no other gap.
	CapBrokerShareGroups Capability = "share-groups"

	srcKIP932 = "KIP-932 (Queues for Kafka): acquisition lock group.share.record.lock.duration.ms (default 30 s), delivery count and group.share.delivery.count.limit (default 5), ACCEPT / RELEASE / REJECT, archived records; KIP-1222 (RENEW, Kafka 4.2); franz-go pkg/kgo/consumer_share.go and pkg/kfake/share_groups.go"
)

func init() {
	Add(
		br("BR-9.1", Must, Requirement, "Kafka share groups: each RELEASE counts a delivery, and at the delivery count limit the record is archived: delivered exactly limit times, attempts 1 to limit",
			"具体重试次数要按所选产品版本与配置核对。 A share group's broker counts every acquisition of a record; a released record is acquired again one count higher, and one released at group.share.delivery.count.limit is archived, not delivered again. Archival is read from the share-partition start offset passing the record.",
			srcAckWords+"; "+srcKIP932, CapBrokerShareGroups),
		br("BR-9.2", Must, Characterization, "Kafka share groups: a record archived at the limit is gone for the group (no dead-letter topic before Kafka 4.4), though still in the log; named as a hazard",
			"Consumer ACK 只代表 broker 认为该次处理已完成；各 broker 的确认词不能跨产品替换。 A record archived at the delivery limit is never delivered to the group again; without a dead-letter topic only a reader of the log finds it: a loss for the group's consumers, stated as a hazard, and a delivery after archival fails.",
			srcAckWords+"; "+srcKIP932, CapBrokerShareGroups),
		br("BR-9.3", Must, Requirement, "Kafka share groups: a member that stops holding a record (hung, its session alive) loses it to another member after the lock, not before, one delivery higher; the broker's announced lock is the declared one",
			"写索引→ACK：W1 崩溃，ACK 等待到期后可能重投 W1/W2，重复处理。 In a share group that wait is the acquisition lock: the record a stopped member acquired is locked to it until the lock ends, then acquired by another member with the delivery count one higher; none is lost and none is handed out early.",
			srcCrashAck+"; "+srcKIP932, CapBrokerShareGroups),
		br("BR-9.4", Must, Requirement, "Kafka share groups: an ACCEPT is not a delete: the record stays in the log and another share group still reads it",
			"Redis Stream 的 XACK 移除 PEL 中的引用，不等于自动删除 Stream 条目；各 broker 的确认词不能跨产品替换。 A share group's ACCEPT ends the record for that group only: it stays in the topic under its retention, and a second share group on the topic is delivered it.",
			srcAckWords+"; "+srcKIP932, CapBrokerShareGroups),
	)
}
