package catalog

// Capabilities of a broker with a per-group pending list (Redis Streams).
const (
	CapBrokerPendingList Capability = "pending-list" // a group's delivered, unacknowledged messages with delivery counters, readable by the kit
	CapBrokerTrim        Capability = "trim"         // the kit can cut a topic to its newest messages
)

const (
	srcRedisAck   = "Redis docs, XACK (removes the entries from the group's pending entries list)"
	srcRedisClaim = "Redis docs, XAUTOCLAIM and XPENDING (ownership moves to the claiming consumer for entries idle longer than min-idle-time; the delivery counter grows)"
	srcRedisTrim  = "Redis docs, XTRIM and XAUTOCLAIM (7.0: entries no longer in the stream are deleted from the pending entries list)"

	contractXAck = "Redis Stream 的 XACK 则移除某消费组 Pending Entries List（PEL）中的引用，不等于自动删除 Stream 条目；Redis XACK 若成功，条目仍可能留在 Stream，直到另行删除/裁剪。"
)

func init() {
	Add(
		br("BR-4.1", Must, Requirement, "Redis: XACK removes the entry from the group's pending list and leaves it in the stream",
			contractXAck+" The kit reads the pending list before and after the ack, and the stream after it.",
			srcAckWords+"; "+srcRedisAck, CapBrokerPendingList),
		br("BR-4.2", Must, Requirement, "Redis: a pending entry idle past the minimum idle time is claimed by another consumer, not before, and its delivery counter grows",
			"ACK 等待到期后可能重投 W1/W2，重复处理。 In Redis the ack wait is the claim's min-idle-time: XAUTOCLAIM transfers ownership of messages pending for more than min-idle-time to the claiming consumer, and the entry's delivery counter (XPENDING) is raised by the claim.",
			srcCrashAck+"; "+srcRedisClaim, CapBrokerPendingList),
		br("BR-4.3", Must, Characterization, "Redis: trimming a stream can drop entries still pending; measured, reported as a hazard naming the command, and compared with what the adapter says its trim did",
			"Redis XACK 若成功，条目仍可能留在 Stream，直到另行删除/裁剪；具体持久、保留都要按所选产品版本与配置核对。 A trim (XTRIM MAXLEN) removes entries whether or not a group still holds them pending; a pending entry trimmed away is never redelivered.",
			srcAckWords+"; "+srcRedisTrim, CapBrokerPendingList, CapBrokerTrim),
	)
}
