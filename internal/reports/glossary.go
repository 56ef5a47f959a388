package reports

// Term is one entry of the report's glossary: the words the report uses
// that a reader outside the kit would otherwise have to guess. docs/report.md
// carries the same list.
type Term struct {
	Term string
	Text string
}

// Glossary lists the report's own terms, in the order a reader meets them.
var Glossary = []Term{
	{"pass", "the target did what the rule's contract sentence requires, in every check the rule made."},
	{"fail", "the target's behaviour contradicts the contract sentence; the evidence shows the history that proves it. A fail is always about the target, never about the kit."},
	{"unknown", "the kit could not decide: its own set-up failed, a wait was longer than the run allows (tck run --max-wait), or a randomized rule did not reach its power target. Unknown is never counted as pass; the reason names what is missing."},
	{"not-applicable", "the target lacks a capability the rule needs (for example a broker with no nak delay); the reason names the capability. It certifies nothing either way."},
	{"skipped", "the rule was not run: filtered out with --rule, or the run was interrupted. The reason says which."},
	{"MUST / SHOULD / MAY", "the strength of the rule (RFC 2119). Only a failed MUST makes the run not conformant (exit 1); a failed SHOULD or MAY is reported and does not change the exit code."},
	{"requirement", "a rule kind: the target either satisfies the contract sentence or fails it."},
	{"characterization", "a rule kind: the rule measures a property (a de-dupe window, a retention's behaviour across a restart) and compares it with what the target declares. It fails only when the measurement contradicts the declaration; a characterization pass says the declaration is true, not that the property is desirable."},
	{"contract sentence", "the sentence of the contract the rule enforces, quoted from its source (a seed document or the product's documentation) or paraphrased from it; the source names the document and section."},
	{"seed (document)", "one of the contract documents the kit's rules come from (seeds/000, seeds/002: Chinese course texts). \"seed 002 §二\" is section 二 of seeds/002. Not to be confused with a random seed."},
	{"random seed", "the number that seeds a randomized rule's schedule (CO-5.1, the eventstore race rules); tck run --seed N replays the same schedule. It has nothing to do with the seed documents."},
	{"seed time", "time in the seed document's scenario (its 5-minute window, its 11-minute redelivery). The consumer suite runs those scenarios on a scaled clock: the time scale says how much real time one seed minute takes (x1200: a seed minute is 50 ms real)."},
	{"time scale", "the factor between seed time and real time on a target; \"real time\" where the rules wait the declared durations as they are."},
	{"wait by definition", "how long a rule has to wait because of what it checks (a de-dupe window to pass, an ack wait to end), before any overhead. A rule whose wait by definition is longer than the run allows (tck run --max-wait) is unknown (skipped on the kit's own test settings), never shortened and never guessed."},
	{"rule wall time", "how long the rule took on the kit's clock, waits included."},
	{"pos=", "the position (sequence number) the broker gave a stored message in its stream. \"pos=3 stored\" is a new message at position 3; \"pos=1 duplicate\" is the broker answering that the message is a duplicate of the one stored at position 1, and storing nothing."},
	{"attempt", "the delivery counter the broker sends with a message: attempt 1 is the first delivery, 2 and higher are redeliveries."},
	{"recovered", "a publish whose outcome the producer could not know (a lost reply, a timeout) but which a consumer received after all: it was stored. Recovered messages are not lost and not duplicates."},
	{"lost", "acknowledged (a publish confirmed, or an ack sent) and then never seen again where it should be: a message never delivered, an effect never done, an ack the broker never received."},
	{"dropped as duplicate", "the broker or the consumer recognised a repeat and did not store it or apply it again: the intended, harmless outcome of a retry. Drawn as a hollow circle, never like a stored message."},
	{"window", "a span of time a mechanism covers: the broker's de-dupe window (a repeated id inside it is dropped), the ack wait (an unacknowledged delivery comes back after it), a consumer's de-dupe record lifetime. Timelines draw windows as shaded spans."},
	{"hazard", "a risk that is not (only) a rule failure. Each hazard says whose it is: the target's configuration or behaviour, the kit's own test set-up (its scratch server, its shortened windows), or the pipeline profile (the team's declared design, found by static analysis)."},
	{"kit test settings", "the settings the kit chose for its own scratch target (a 2 s de-dupe window, a 1 s ack wait) so the rules finish quickly. They are not the team's configuration unless a pipeline profile supplied them."},
	{"declared / actual", "declared is what the target or the profile says a setting is; actual is what the kit read from the server (\"read from the server\") or measured with a workload (\"measured\")."},
	{"embedded / container / external", "how the target was reached: started inside the kit's process, in a container the kit started, or at a URL the user gave (the team's own server)."},
	{"emulator", "a target that imitates a product rather than running it (kfake for Kafka). A pass on an emulator certifies the client-side contract and the kit's rules, not a deployment of the product."},
	{"mutant", "a deliberately broken adapter used only by tck selftest: every rule must be failed by at least one mutant, which shows the rule can fail."},
	{"contended trial", "one trial of a race rule in which the writers really overlapped; the power figure says how rare a violation the trials would have caught with 99% probability."},
	{"timeline", "the operations the rule performed and observed, one lane per actor, on the kit's clock (t=0 is the rule's start). Shapes tell outcomes apart; the legend under each timeline names them."},
	{"branch", "in the seed's two-branch timeline: two independent retries from one first publish (branch A inside the window, branch B past it), not one path that retries twice."},
}
