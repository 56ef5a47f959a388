package catalog

// Capabilities a consumer target may declare.
const (
	// CapTwoScopes: the consumer declares both side-effect scopes the kit
	// observes (search-index and notify), so their independence can be checked.
	CapTwoScopes Capability = "two-scopes"
	// CapOutbox: the target ships an outbox writer and relay for the kit to crash.
	CapOutbox Capability = "outbox"
)

const (
	seedMQ        = "seeds/002 确认、重投与去重"
	srcConfirm    = seedMQ + ", 一、先把“确认”标到具体一跳"
	srcCrash      = seedMQ + ", 三、消费者 ACK 前后都有崩溃窗口"
	srcScope      = seedMQ + ", 四、去重键要带版本和副作用作用域"
	srcExpiry     = seedMQ + ", 五、短去重窗口过期"
	srcOutbox     = seedMQ + ", 七、DB→broker 空窗"
	srcDownstream = seedES + ", 下游副作用幂等"
)

func co(id string, level Level, kind Kind, title, contract, source string, needs ...Capability) Rule {
	return Rule{ID: id, Suite: "consumer", Level: level, Kind: kind, Title: title, Contract: contract, Source: source, Needs: needs}
}

func init() {
	Add(
		co("CO-1.1", Must, Requirement, "a redelivered event gives exactly one effect per scope",
			"E9 重投 → 同上 (m-9,v1,SearchIndex) → 不把外部效果叠加两次。 The kit redelivers through the broker (a lost ack) and replays the same event id; each scope shows exactly one effect.", srcScope, CapConsumerAckWait),
		co("CO-1.2", Must, Requirement, "a legitimate edit (version 2) is processed, not dropped as a duplicate",
			"若 SearchIndex 只按 message_id=m-9 记录“已处理”，同一消息后来发生合法编辑 v2，新事件 evt:m-9:v2 会被错当成重复而丢掉。合法编辑 E10 (m-9,v2,SearchIndex) 应处理，更新到 v2。", srcScope),
		co("CO-1.3", Must, Requirement, "scopes are independent: one scope's completion does not mark the other done",
			"Notify 是另一个副作用作用域，不能用 SearchIndex 的已处理标记替它宣布通知已完成。E9 给 Notify (m-9,v1,Notify) 不能因搜索已处理就跳过通知。", srcScope, CapTwoScopes, CapConsumerNak),
		co("CO-1.4", Must, Requirement, "a stale replay (v1 after v2) does not overwrite v2",
			"按稳定文档 ID 条件更新到不低于相应业务版本……旧 v1 不应覆盖已处理的 v2。", srcScope),
		co("CO-1.5", Must, Requirement, "the same event delivered to two workers at the same moment gives one effect",
			"“版本比较”和“索引写入”应由外部索引/状态存储的原子条件保证，不能先查版本、再用无条件写入让两个 worker 交错。 Barrier-started trials: one effect per scope.", srcScope, CapConsumerAckWait),
		co("CO-1.6", Must, Requirement, "an older version first delivered after a newer one does not overwrite it",
			"旧 v1 不应覆盖已处理的 v2。 The broker reorders (a nak delay, a redelivery after the ack wait, a replay): v1 reaches the consumer for the first time after v2, twice; the index stays at v2 and v1 is notified once. A de-dupe record does not make an unconditional write safe: v1 has no record yet.", srcScope, CapConsumerAckWait),
		co("CO-1.7", Must, Requirement, "two versions of one message handled at once by two workers: the index ends at the newer",
			"需要留意“版本比较”和“索引写入”应由外部索引/状态存储的原子条件保证，不能先查版本、再用无条件写入让两个 worker 交错。 Barrier-started trials: v2 and v1 (some with a second copy of each) held until both workers have one; the index must end at v2 and each version be notified once.", srcScope, CapConsumerAckWait),
		co("CO-2.1", Must, Requirement, "a crash after the effect and before the ack: the redelivery does not double the effect",
			"写索引→ACK: 搜索索引已更新，broker 尚未记录 ACK，W1 崩溃 → ACK 等待到期后可能重投 W1/W2，重复处理。 The consumer must absorb the redelivery.", srcCrash),
		co("CO-2.2", Must, Requirement, "a crash after the ack and before the effect loses the effect unless a reconciliation restores it",
			"ACK→写索引: 假设 broker 已记录 ACK，W1 尚未写索引就崩溃 → 索引效果可能永久遗漏，除非另有对账/重建。 The kit checks the effect is there after the restart (and after Reconcile, if the consumer has one).", srcCrash),
		co("CO-2.3", Must, Requirement, "a crash between the effect and the de-dupe record gives no double effect",
			"让“检查 + 写入副作用 + 记录完成”具备原子性或可恢复性。 A crash right after the sink call, before the record, must not lead to a second effect on redelivery.", srcDownstream, CapConsumerNak),
		co("CO-2.4", Must, Requirement, "an effect that failed (an error, or a timeout after it took place) is not acked, comes back and counts exactly once",
			"回包丢失又会让调用方对已发生的成功保持未知。 在需要可恢复的消费者路径里，通常选择先完成可幂等副作用，再按 broker 协议 ACK，接受可能重投。 The kit fails the first index write and the first notification of an event, with an error before it takes effect or a deadline error after it did: the delivery must not be acked with the failure unresolved, and each effect ends up there exactly once.", srcConfirm, CapConsumerNak),
		co("CO-2.5", Must, Requirement, "a crash at any step of handling one delivery gives exactly one effect per scope",
			"因此一般不能靠调整两行代码顺序同时获得“绝不漏”和“绝不重”。 The kit records the calls of one clean delivery, then crashes a fresh event at each of them in turn (before the de-dupe check, between the check and the record, between the record and each effect, between scopes, before the ack) and after the last one (after the ack); each point is a named case, and after the redelivery (and Reconcile, if the consumer has one) each scope shows exactly one effect.", srcCrash, CapConsumerNak),
		co("CO-2.6", Must, Requirement, "an ack that fails (an error while the instance lives, a timeout after the broker took it) undoes no effect and repeats none",
			"若 ACK 请求本身在网络中丢失，W1 也可能不知道 broker 是否已记录，仍需允许后来重投。 The kit fails the ack of a handled event as brokers' acks fail: with an error before the broker took it (the broker redelivers after its ack wait) and with a deadline error after it did (it will not); then replays each event. Each scope shows exactly one effect: the effects done before the ack stay done, and neither the redelivery nor the replay repeats them.", srcCrash, CapConsumerAckWait),
		co("CO-2.7", Must, Requirement, "any call can fail, the later ones as much as the first: a consumer that retries gets every effect exactly once, and a failed de-dupe read is not taken for \"no record\"",
			"回包丢失又会让调用方对已发生的成功保持未知。 让“检查 + 写入副作用 + 记录完成”具备原子性或可恢复性。 The kit fails the calls of an event the consumer makes through it, its second and third call as much as its first: three effect calls of a scope in a row (an error before the effect), three reads of the de-dupe store (env.Store) when a handled event comes back, then any effect or store call of a few events, first versions, edits and replays, at rates drawn from the rule's seed (an error before the call applied, or for a write a deadline error after it did), at most 3 in a row per call and 5 per event of effect calls and of store calls. No delivery may be acked with a failed effect not called again; each effect ends up there exactly once, once the consumer is quiet.", srcConfirm, CapConsumerNak),
		co("CO-3.1", Must, Requirement, "the de-dupe horizon covers the redelivery horizon",
			"消费者去重记录只保留 10 分钟……在 t=11 分钟把 E9 再交给 W2……若去重记录已过期，W2 查不到“之前处理过”，就可能再次做外部效果。 Run on a scaled clock; a second effect fails the rule.", srcExpiry),
		co("CO-4.1", Must, Requirement, "outbox: a crash between commit and publish still delivers the event once; a rollback publishes nothing",
			"业务消息与待发布记录在同一个本地数据库事务里，然后转发、重试和消费者幂等。 A crash of the writer or relay between commit and publish still delivers the event, exactly once after de-dupe; a rolled-back transaction publishes nothing.", srcOutbox, CapOutbox),
		co("CO-5.1", Must, Requirement, "a randomized schedule of redeliveries, edits, stale replays and crashes ends equal to the model",
			"每个有副作用的消费者都应在自己的持久边界内记录稳定输入身份. A seeded schedule of at least 200 events ends with every sink equal to the model and every (message, version, scope) effect counted exactly once.", srcDownstream, CapConsumerAckWait, CapConsumerNak),
		co("CO-5.2", Must, Requirement, "thousands of distinct events, then redeliveries reaching back to the oldest: no second effect (the de-dupe store has no capacity that shows)",
			"每个有副作用的消费者都应在自己的持久边界内记录稳定输入身份. The kit hands the consumer 12000 distinct events in process (a thousand to a service; over another broker as many as its time budget allows, at least 2000), across a calendar boundary of its clock, then replays the oldest and a sample of every age: a de-dupe store with a capacity (an LRU of 10000 keys), an eviction policy or a record kept per calendar day makes a second effect. The evidence states the reach: how many events and how much time back the oldest replay came, and the store capacity it rules out.", srcDownstream),
	)
}
