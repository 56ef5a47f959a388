package catalog

// CapPreCheck: the event-store target ships a fast request-id pre-checker.
const CapPreCheck Capability = "precheck"

const (
	seedES         = "seeds/000 失败与幂等"
	srcDurable     = seedES + ", EventStore 持久约束"
	srcConflicts   = seedES + ", 版本与创建冲突"
	srcPreCheck    = seedES + ", 快速预检与权威确认"
	srcRequestID   = seedES + ", commandId 与 requestId"
	srcRetry       = seedES + ", 超时后的查询与重试"
	contractAtomic = "生产存储必须在自身的原子写入边界内强制版本与 request-ID 唯一性，并正确映射异常；“先查询、后写入”的应用逻辑不能替代该约束。"
	// The power targets of the race rules (suites/eventstore, RaceConfig.Power).
	powerFull = " Power target: 459 contended trials (trials in which at least two calls overlapped in time), which catch a violation shown in 1% of contended trials with 99% probability; a slow store that reaches the cap short of them is judged on the contended trials reached, their power stated, and below the floor of 90 (a violation in 5%) the rule is unknown, never pass."
	powerWeak = " Power target: 90 contended trials (trials in which at least two calls overlapped in time), which catch a false conflict shown in 5% of contended trials with 99% probability; a slow store that reaches the cap short of them is judged on the contended trials reached, their power stated, and below the floor of 17 (a false conflict in 25%) the rule is unknown, never pass."
)

func es(id string, level Level, kind Kind, title, contract, source string, needs ...Capability) Rule {
	return Rule{ID: id, Suite: "eventstore", Level: level, Kind: kind, Title: title, Contract: contract, Source: source, Needs: needs}
}

func init() {
	Add(
		es("ES-1.1", Must, Requirement, "append at the initial version, then load returns the same stream",
			"EventStore.append is the durable boundary at which a stream becomes authoritative history: identity, version, request id, command id and events (in order, bytes unchanged) are what load returns.", srcDurable),
		es("ES-1.2", Must, Requirement, "loading an unknown aggregate returns nothing and no error",
			"An aggregate without history has an empty authoritative history; that is an answer, not a failure.", srcDurable),
		es("ES-1.3", Must, Requirement, "a second create with another request id raises the creation conflict",
			"DuplicateAggregateIdException：初始版本的创建与已有聚合身份冲突。 History is unchanged.", srcDurable),
		es("ES-1.4", Must, Requirement, "an append at a version already taken raises the version conflict",
			"EventVersionConflictException：要追加的事件版本与现有历史冲突。 History is unchanged.", srcDurable),
		es("ES-1.5", Must, Requirement, "the same request id at the next free version raises the duplicate-request-id conflict",
			"DuplicateRequestIdException：同一聚合已经使用该 requestId。 The error carries the aggregate and request id; nothing is persisted. Probed over the aggregate's whole history: the request id of the first, a middle and the last stream of a 100-stream history is retried.", srcDurable),
		es("ES-1.6", Must, Requirement, "the same request id on different aggregates is accepted",
			"同一聚合内，相同 requestId 表示重复请求；不同聚合可以使用相同值。", srcRequestID),
		es("ES-1.7", Must, Requirement, "an exact retry of a create is a typed conflict and the request id is found",
			"创建冲突不等价于同一请求已成功：先用聚合身份和 requestId 区分“原创建请求的重复提交”与“另一业务意图争用同一 ID”。 The store SHOULD choose the duplicate-request-id conflict; the report records its choice.", srcConflicts),
		es("ES-1.8", Must, Requirement, "the authoritative request-id query answers per aggregate",
			"通过 RequestIdExistenceChecker 查询持久历史: true for a stored id, false for an unknown id, false for the same id on another aggregate (context, aggregate name, id and tenant each varied on its own), true for the first, a middle and the last stream of a 100-stream history.", srcPreCheck),
		es("ES-1.9", Must, Requirement, "a rejected multi-event stream leaves no partial events",
			"EventStore.append 是事件流能否成为权威历史的持久边界: a stream is stored whole or not at all.", srcDurable),
		es("ES-1.10", Must, Requirement, "conflicts are typed and inspectable; other failures are not conflicts",
			"诊断与 API 错误映射应读取这些字段，而不是解析异常文本。 Conflicts carry aggregate, version and request id for errors.As; a cancelled context or a closed connection is not reported as a conflict; after Close, Append, Load and RequestIDExists each fail with an error that is not a conflict.", seedES+", CommandResultException"),
		es("ES-1.11", Must, Characterization, "the version-gap policy matches the declaration",
			"不要静默递增期望版本或覆盖历史。 Whether tail+2 is accepted is measured and compared with what the adapter declares.", srcConflicts),
		es("ES-1.12", Must, Requirement, "load returns ascending versions over an inclusive range; a bad range is an argument error",
			"The authoritative history is read back in version order; a malformed query is an argument error, never a conflict.", srcRetry),
		es("ES-1.13", Must, Requirement, "the same id under another tenant or aggregate name is another aggregate",
			"Aggregate identity is (context, aggregate name, id, tenant); 同一聚合内 uniqueness does not leak across identities.", srcRequestID),
		es("ES-1.14", Must, Requirement, "version 0 or below is an argument error, not a conflict, on a new and an existing aggregate",
			"要追加的事件版本与现有历史冲突 is decided on the version asked, never on another: an append at version 0, -1, -32768 or -2^31 (the negatives a 16- or 32-bit wrap gives) returns an error wrapping es.ErrInvalidArgument, not a version conflict, on a new aggregate and on one at version 1; it is not taken as \"any version\" (不要静默递增期望版本): the history is unchanged and RequestIDExists does not find its request id.", srcConflicts),
		es("ES-1.15", Must, Requirement, "request ids and aggregate ids that collide, match or decode alike are distinct",
			"同一聚合内，相同 requestId 表示重复请求: the same string, not a string equal under a hash, a pattern, a decoding or a charset. Pairs of ids equal under a store shortcut (a Java String.hashCode collision, an FNV-1a-32 and a CRC32 collision, SQL LIKE and glob/regex metacharacters where the other id has an ordinary character, URL-reserved characters and their percent-encoded or form-decoded twins, ids differing only in a letter outside Latin-1: Cyrillic, Greek, CJK, an emoji, a combining mark) are stored both ways (A then B, B then A, on fresh aggregates): the second request id at the next version is stored, RequestIDExists finds both and not the unstored one; the two aggregate ids of a pair are two aggregates.", srcRequestID),
		es("ES-1.16", Must, Requirement, "calls cut short answer an error or the truth",
			"无法确认：保持未知并升级处理，不要换新 requestId 盲目重发: after a timeout the caller confirms the authoritative history by aggregate and requestId, so a query that could not run must say so, not answer \"not appended\". Under a cancelled context, a deadline already past and deadlines that pass during the call (from 1µs to a fraction of the call's own latency), on an aggregate the kit stored and read back: RequestIDExists of a stored request id answers true or an error, never false with no error (nor true for an id never stored); Load answers the stored streams or an error, never fewer with no error; an Append that returns nil is stored (read back with a live context), one that returns an error is stored whole or not at all; and an Append of a request id already stored (the store's own pre-check failing with its context) never returns nil and never stores a second stream. A read-back that fails leaves the rule unknown.", srcRetry),
		es("ES-1.17", Must, Requirement, "versions go on past 2^15 and 2^16 on one aggregate",
			"要追加的事件版本与现有历史冲突 is decided on the version asked, whatever its size; 不要静默递增期望版本或覆盖历史. A stream is one version however many events it carries, so one aggregate is grown by 65540 appends of one event each (two at the edges), the handles in turn: every append at the next version is stored; after 32767, 32768, 65535 and 65536 an append at the version taken, and (without declared gaps) at tail+2, is an es.VersionConflictError carrying the version asked; the whole history loads back with versions 1, 2, 3, ... exactly; loads of ranges around 32767, 32768, 65535, 65536 and 65537 return those streams; the request ids stored at 32768 and 65536 are found and, again at the next version, are es.DuplicateRequestIDError carrying the version asked. The fill's budget is 5 s of the kit's scheduled time (75% of a longer Target.Timeout, or a longer MaxWait): the store's pace is measured over its first appends (at least 64 and 300 ms), and a store that would need longer to reach 65540 is skipped, the reason and the figures naming its pace, the time it would need and the Timeout that runs it, never fail; a fill that falls short of its aim after all (the kit starved, the pace dropped) is unknown naming the version reached and the kit's lateness; what was reached is still checked.", srcConflicts),
		es("ES-1.18", Must, Requirement, "an aggregate holds more than 2^15 and 2^16 events",
			"EventStore.append is the durable boundary at which a stream becomes authoritative history: its events, in order, bytes unchanged, are what load returns, however many the aggregate holds. One aggregate is given 66000 small events in 66 appends of 1000 (each event's body its position in the aggregate, its name from it), so that its event count passes 32767, 32768, 65535 and 65536: the whole history and ranges of versions across those positions load back with every event exactly once, in order, with its name and body, in the streams appended. The appends are paced like ES-1.17's fill (a store that would need longer than its budget is skipped naming its pace and the time it would need).", srcDurable),
		es("ES-2.1", Must, Requirement, "racing writers at one version: exactly one success, the rest version conflicts",
			contractAtomic+" N writers released together at one version: one success, N-1 version conflicts, one stream stored."+powerFull, srcDurable),
		es("ES-2.2", Must, Requirement, "racing creates: exactly one success, the rest creation conflicts",
			contractAtomic+" N concurrent creates: one success, N-1 creation conflicts."+powerFull, srcDurable),
		es("ES-2.3", Must, Requirement, "one request id raced at different versions is stored at most once",
			"预检与持久追加之间存在竞争窗口；两个并发请求都可能通过读取检查。 Only the store's own constraint stops the second copy."+powerFull, srcPreCheck),
		es("ES-2.4", Must, Requirement, "one request id raced across different aggregates: all succeed",
			"不同聚合可以使用相同值, also under concurrency."+powerWeak, srcRequestID),
		es("ES-2.5", Must, Requirement, "across every race, reported successes equal streams stored",
			"不能只凭失败阶段判断事件是否已追加: a success the store reports must be stored, and nothing may be stored that was reported as failed."+powerFull, seedES+", 失败发生在哪一层"),
		es("ES-2.6", Must, Requirement, "parallel appends to different aggregates all succeed",
			"Uniqueness is scoped to one aggregate: concurrent appends to different aggregates raise no conflicts."+powerWeak, srcDurable),
		es("ES-3.1", Must, Requirement, "the pre-check confirms a fast 'maybe' with the authoritative query and fails closed",
			"快速检查判定可以继续时直接放行；当它报告“可能重复”时，再通过 RequestIdExistenceChecker 查询持久历史。没有权威查询器时默认拒绝该请求，而不是冒险放行。", srcPreCheck, CapPreCheck),
		es("ES-4.1", Must, Requirement, "a randomized multi-instance history of appends, retries, loads and queries equals the model",
			contractAtomic+" A seeded schedule of 260 steps (appends at the next version, four bursts of up to 1500 appends to one aggregate (6000 request ids; as many as the store takes in 65% of the rule's deadline, at least 512), stale appends, creates, retries of stored request ids, a refused request id again at the next version, twin request ids of every kind, the pair's other aggregate's request ids, reach-back retries and queries of the oldest stored request ids, loads of version ranges, request-id queries, handle reopens) over 3 handles on one store and a time horizon (1.5 s by default, --max-wait longer), on pairs of aggregates the contract keeps apart (case, NFC/NFD, spaces, a tail past 255 characters in id, name, context or tenant, a separator moved between id and tenant, '/' vs '_' and ':' vs '-'), with ids of every class and bodies from empty to over 1 MiB: every answer equals the sequential model's, every refusal's typed conflict carries the aggregate, version and request id asked. A failure shows the seed and the history shrunk by replay; tck run --seed (or Target.Seed) replays it.", srcDurable),
		es("ES-4.2", Must, Requirement, "loads and request-id queries during multi-event appends see whole streams only (no torn read)",
			"EventStore.append 是事件流能否成为权威历史的持久边界: a stream becomes visible whole or not at all, on every handle. Writers on two handles race multi-event appends at the next version while readers on other handles load and query; the history (call and return times) is checked for linearizability against the model (porcupine) and every loaded stream equals the one appended, event for event, byte for byte.", srcDurable),
		es("ES-4.3", Must, Requirement, "a used request id stays refused long after: the oldest of thousands of ids and a random sample, retried seconds later, are duplicates",
			"DuplicateRequestIdException：同一聚合已经使用该 requestId。 "+contractAtomic+" A request id is used for ever, not for as long as a cache (a time to live, an LRU of some thousand ids) remembers it. Six writers store up to 16000 streams with distinct request ids on six aggregates through 3 handles as fast as the store takes them (at most 3 s), the rule lets the oldest reach 5.5 s (--max-wait longer; time the kit was not scheduled does not count), stores more distinct ids to bring the total to 24000 (sized from the measured rate, at most 1.5 s), then retries the 32 oldest and 32 random request ids at their aggregate's next version with a new command id, through the old handles and 2 fresh ones: each must be refused with the typed duplicate-request-id conflict carrying the aggregate, version and request id asked, RequestIDExists must say true (and false for ids the aggregate never stored), and every aggregate must load back with each stream once. The evidence states the ids stored, the oldest age reached, the ids stored between the oldest and its retry, the sample and the seed; below 1.5 s and 6000 ids it is unknown.", srcDurable),
	)
}
