package catalog

// The api suite's capabilities, each decided by the target's endpoint
// description or by how the kit reached it.
const (
	// CapScope: the description declares where a tenant or user goes, so
	// the same id under another scope can be tried.
	CapScope Capability = "scope"
	// CapRestart: the kit started the service (the reference, a cmd:
	// target) and can restart it on the same durable state.
	CapRestart Capability = "restart"
	// CapOwnStore: the kit runs the service in its own process over a
	// store it controls (the reference and its mutants), so it can make
	// the service's store calls fail.
	CapOwnStore Capability = "own-store"
)

const (
	seedAPI      = "seeds/000 失败与幂等"
	srcAPIRetry  = seedAPI + ", 超时后的查询与重试"
	srcAPIStage  = seedAPI + ", 失败发生在哪一层"
	srcAPIResult = seedAPI + ", CommandResultException"
	srcAPIReqID  = seedAPI + ", commandId 与 requestId"
	srcAPI409    = "seeds/002 确认、重投与去重, 七、DB→broker 空窗与 HTTP 409"
	srcIdemKey   = "IETF HTTPAPI draft-ietf-httpapi-idempotency-key-header (The Idempotency-Key HTTP Header Field)"
	contractAPI  = "当前 S2 HTTP 合同同消息 ID 再 POST 一律 409，旧消息不变 (reject-409); or, per " + srcIdemKey + ", a retry with the same key gets the first response (replay). The service declares which; the kit checks that one."
	// The race rule's power target (suites/api, RaceConfig.Power).
	powerAPI = " Power target: 459 contended trials (trials in which at least two requests overlapped in time), which catch a violation shown in 1% of contended trials with 99% probability; at its cap short of them the rule is unknown, never pass."
)

func api(id string, level Level, kind Kind, title, contract, source string, needs ...Capability) Rule {
	return Rule{ID: id, Suite: "api", Level: level, Kind: kind, Title: title, Contract: contract, Source: source, Needs: needs}
}

func init() {
	Add(
		api("API-1.1", Must, Requirement, "a first request creates, and the authoritative read by the stable id shows it",
			"业务系统应提供足以按稳定身份查询结果的接口: before the request the read by its id answers the declared missing status; the create answers a declared created status; the read right after it shows the resource with the payload sent, and one resource carries the id.", srcAPIRetry),
		api("API-1.2", Must, Requirement, "a repeat with the same id and payload gets the declared answer and leaves one resource",
			contractAPI+" reject-409: the declared conflict status, the read unchanged; replay: the first response's status and body byte for byte. Either way exactly one resource carries the id. Where the id or the scope travels in a header, the repeat is sent again with that header's name in other casings (all lower, all upper, every letter's case swapped, the canonical form, a mix drawn from the seed): field names are case-insensitive (RFC 9110 §5.1), so each is the same request and gets the declared repeat answer.", srcAPI409),
		api("API-1.3", Must, Requirement, "the same id with another payload is refused and the original is unchanged",
			"后者应返回业务冲突，而不是改用另一个 request ID 重放创建: the same id with another payload is refused with the declared status (409 for reject-409; 422 for replay, per "+srcIdemKey+"), and the read shows the first payload.", seedAPI+", 版本与创建冲突"),
		api("API-1.4", Must, Requirement, "ids are scoped as declared: the same id under another tenant is another request",
			"同一聚合内，相同 requestId 表示重复请求；不同聚合可以使用相同值: the same id under another declared scope (tenant or user) creates its own resource, and each scope reads back its own payload.", srcAPIReqID, CapScope),
		api("API-1.5", Must, Requirement, "a repeat after the service restarts still gets the declared answer",
			"Wow 的等待超时释放本地句柄，不提供分布式撤销: what decides a repeat must be durable. After the kit kills and restarts the service on the same state, the read shows the resource and a repeat gets the declared answer (a replay byte for byte).", srcAPIRetry, CapRestart),
		api("API-2.1", Must, Requirement, "one id sent by N requests at once: exactly one creation, the rest declared answers, never a 5xx",
			"“先查询、后写入”的应用逻辑不能替代该约束: N >= 8 requests with one id and one payload released together at a barrier: one creation, every other answer a declared one (reject-409: the conflict status; replay: the creation replayed byte for byte or the declared in-flight status), no 5xx, one resource in the read-back."+powerAPI, seedAPI+", EventStore 持久约束"),
		api("API-3.1", Must, Requirement, "a lost response: the query by the stable id finds the result, and a retry with the same id creates nothing",
			"超时后的安全流程是：保留原命令的 requestId，把结果标为未知；按 requestId 确认权威事件历史；仍使用原 requestId 重试。不要在超时后仅为绕过重复检查而生成新 requestId。 The kit's fault proxy lets the request reach the service and drops the answer; the read by the id shows the resource; a retry with the same id gets the declared answer (replay: the dropped response byte for byte) and leaves one resource. A retry with a fresh id is made too and the second resource it creates is recorded as the hazard it is.", srcAPIRetry),
		api("API-3.2", Must, Requirement, "identity is the id, not the payload: a fresh id with an identical payload is a new request",
			"新的业务意图，使用新的 requestId: two ids with byte-identical payloads are two requests and create two resources; a service that de-dupes by content merges distinct intents.", srcAPIReqID),
		api("API-1.6", Must, Requirement, "one id is its bytes: ids that differ only in case, normalization, a tail past 32 bytes, a trailing space or where the tenant ends are two requests, and each repeated is one",
			"同一聚合内，相同 requestId 表示重复请求；不同聚合可以使用相同值: an id is an opaque string compared byte for byte within its scope (docs/api.md, \"One id or two\"). For each twin its places can carry (every letter's case swapped; the first 32 or more bytes shared; the tenant's end moved into the id, so tenant+id is equal without a separator; for ids in a body or query, one letter in NFC and NFD, and a trailing space; a URL-reserved character and its percent-encoded form; a query-language metacharacter where the other id has another character, both orders; a Java String.hashCode, FNV-1a or CRC32 collision; for ids in a body or query, letters that differ only in script or code point) the twin creates its own resource, each reads back its own payload, and the same bytes repeated get the declared repeat answer, one resource each. The steps of each pair rotate over every replica the kit started.", srcAPIReqID),
		api("API-4.1", Should, Requirement, "a refusal carries the stable identifiers as fields (problem+json), not only in text",
			"诊断与 API 错误映射应读取这些字段，而不是解析异常文本。 A refused repeat is a JSON body (RFC 9457 application/problem+json) whose members hold the request id (and the scope, and any further members the description declares, such as stage and errorCode), its status member (if any) equal to the HTTP status; a text message is not enough, and a 5xx is not a refusal.", srcAPIResult),
		api("API-5.1", Must, Requirement, "a randomized multi-replica schedule of creates, repeats, reads and other-payload refusals across tenants, over time and kills, equals the model",
			contractAPI+" A seeded schedule of 48 operations (creates, repeats, one field of the payload changed, reads by id, two creates of one key at once on two replicas, kills between requests and inside a create's handling where the kit can restart the service, pauses over 0.2 s) on 14 keys of every value class, several of them twins of others (case, tail, tenant/id split, normalization, spaces, and about one a run of API-1.6's URL, metacharacter, hash or script pairs), spread over the replicas the target declares: every answer must be one the sequential model of the declared contract allows, in an order consistent with the calls' times (linearizability, checked with porcupine where calls overlap). A failure is shrunk to the smallest failing part of the schedule, replayed on fresh keys; the seed is in the evidence and tck run --seed replays it. Power: the evidence states the operations run, the replicas, the frequency of each operation and value class, and the time horizon.", srcAPIRetry),
		api("API-5.2", Must, Requirement, "a repeat gets the declared answer up to the declared retention: checked up to the lesser of it and the kit's horizon",
			"What decides a repeat must be kept as long as the service promises (the description's retention; none declared: for ever). Three keys are repeated at 10%, 35%, 70% and 100% of the horizon after their creation (6 s by default, tck run --max-wait instead when set, never past nine tenths of the declared retention); each repeat gets the declared answer and one resource carries each key. Each key's repeats rotate over every replica the kit started, the first on a replica that did not create it. The evidence states the horizon verified; beyond it nothing is claimed.", srcAPIRetry),
		api("API-5.3", Must, Requirement, "a create killed inside its handling: after the restart the read and repeats are what the contract allows",
			"超时后的安全流程是：保留原命令的 requestId，把结果标为未知；按 requestId 确认权威事件历史；仍使用原 requestId 重试。 The kit's fault proxy forwards a create and the kit SIGKILLs the service at a point spread over the request's handling (six creates, the k-th killed in the k-th sixth of a create's measured latency), before its answer reaches the client, then restarts it: the read by id finds the resource or not, and two repeats then get a creation (none was made) or the declared repeat answer (replay: one stable response, never in flight for ever), checked against the model; one resource carries the id. A response stored in a second transaction after the commit is caught here.", srcAPIRetry, CapRestart),
	)
	// Issue 37: failures of a dependency the kit controls.
	Add(
		api("API-6.1", Must, Requirement, "when the service's own store fails, it answers an error: never a second creation, never a confident answer it could not know; a repeat after the failures gets the first's answer",
			"没有权威查询器时默认拒绝该请求，而不是冒险放行。无法确认：保持未知并升级处理 (a service that cannot consult its authoritative store answers an error, never guesses): the kit makes the service's store calls (append, load, the request-id query) fail at rates drawn from the seed, cancelled, timed out (a write possibly after taking effect) or with a plain error, and forces the first store call of a fresh create, of a repeat and of a read to fail in each way. Under those failures every create is answered with a server error, a declared creation (only while none was made), or the declared repeat answer (only once one was made); a read or a list of a created resource answers it or an error, never \"missing\". Once the failures stop, a repeat of each id gets the first creation's declared answer (replay: byte for byte), the read shows its payload, and one resource carries each id.", seedAPI+", 快速预检与权威确认", CapOwnStore),
	)
}
