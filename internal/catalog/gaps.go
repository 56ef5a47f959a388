package catalog

// Gap is what a target leaves to others when it lacks one of the contract's
// mechanisms: the rules needing the capability are not-applicable, and a
// report that only said "conformant" would hide that the producer or the
// consumers must then do the broker's job (seed 002: each confirmation
// proves one hop; what a hop does not do, the next must). One entry per
// capability; a capability without an entry (a kit-side instrument such as
// fault-proxy, or a product's own vocabulary such as pending-list) leaves
// nothing unprotected by its absence and gets no line.
type Gap struct {
	Capability Capability `json:"capability"`
	// Kind is GapUnprotected (the target has no such mechanism) or
	// GapUnmeasured (it may have it, but the kit could not exercise it).
	Kind string `json:"kind"`
	// Missing names the absent mechanism ("no producer de-dupe").
	Missing string `json:"missing"`
	// Leaves says what nothing on the target protects without it.
	Leaves string `json:"leaves"`
	// Who must compensate ("producer", "consumers", "operator"), and how.
	Who        string `json:"who"`
	Compensate string `json:"compensate"`
	Source     string `json:"source"`
}

const (
	GapUnprotected = "unprotected"
	GapUnmeasured  = "unmeasured"
)

var gaps = []Gap{
	{CapBrokerDedupe, GapUnprotected, "no producer de-dupe",
		"a producer's retry of a publish whose reply was lost is a second entry: nothing on the broker recognises the same message id (a client library's retries inside one session aside, where the rule's reason says so)",
		"producer and consumers", "the producer keeps one stable event id per change and checks the publish result; every consumer de-dupes by (event id, version, side effect)",
		srcLostAck + "; " + seedBR + ", 四、去重键要带版本和副作用作用域"},
	{CapBrokerCrashRedelivery, GapUnprotected, "no redelivery of what a dead consumer held",
		"a delivery a consumer held when it died is not handed to another member",
		"consumers", "the consumer side finds and replays unfinished work itself (reconciliation against the authoritative store)",
		srcCrashAck},
	{CapBrokerAckWait, GapUnprotected, "no ack wait",
		"an unacknowledged delivery does not come back after an ack wait while its consumer lives: a hung consumer holds it (the rule's reason says what does bring it back)",
		"consumers", "every consumer bounds its own processing time and settles each delivery; a stuck one must be found and restarted",
		srcCrashAck},
	{CapBrokerNakDelay, GapUnprotected, "no delayed negative acknowledgement",
		"a consumer cannot ask for a later retry: a failed delivery comes back at once where the broker takes a plain nak (a share group's RELEASE), else only by what the broker does on its own (an ack wait, a claim, a rebalance: the rule's reason says which)",
		"consumers", "the consumer leaves a failed delivery unacknowledged (or republishes it) and paces its own retries",
		srcAckWords},
	{CapBrokerTerm, GapUnprotected, "no terminate",
		"a message that can never be processed cannot be retired by the consumer's word: it keeps coming back, or holds up what follows it",
		"consumers", "the consumer settles it (acks it, or commits past it) and parks it in a store of its own",
		srcAckWords + "; " + srcNATSCons},
	{CapBrokerMaxDeliver, GapUnprotected, "no max-deliver or dead letter",
		"nothing limits delivery attempts and nothing dead-letters: a poison message comes back as often as it fails",
		"consumers", "the consumer counts attempts (the broker's delivery counter where it has one, else its own) and parks a message past its own limit",
		srcAckWords + "; " + srcNATSCons},
	{CapBrokerInProgress, GapUnprotected, "no in-progress",
		"a long delivery cannot push its redelivery deadline back: past it (an ack wait, a claim's idle time, a group session) it goes to another member while the first still works on it",
		"consumers", "each delivery finishes inside the ack wait, or its side effect stays idempotent under a concurrent second worker",
		srcCrashAck + "; " + srcNATSCons},
	{CapBrokerRestart, GapUnmeasured, "durability across a broker restart not measured",
		"the kit does not restart a server it did not start, so no run showed acknowledged publishes surviving a restart",
		"operator", "the operator checks the server's persistence settings (the rule's reason names them where the kit read them) and tests a restart",
		srcAckWords},
}

// GapOf is the entry for capability c, if its absence leaves something to
// others.
func GapOf(c Capability) (Gap, bool) {
	for _, g := range gaps {
		if g.Capability == c {
			return g, true
		}
	}
	return Gap{}, false
}

// Gaps is the whole table, in the order a report lists it.
func Gaps() []Gap { return append([]Gap(nil), gaps...) }
