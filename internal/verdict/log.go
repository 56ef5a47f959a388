package verdict

// Log is where a fault a target injects writes what it did while a rule
// ran: the rule's timeline and evidence. The suites and adapters that take
// a fault name this one interface (by an alias). It lives here, beside the
// evidence it writes to, so an adapter names it without importing a suite.
type Log interface {
	// Step is a step on the rule's timeline: ok when err is nil, failed
	// (with the error text) otherwise.
	Step(actor, action, key string, err error)
	// Note is an informational step on the timeline.
	Note(actor, action, key, result string)
	// Figure is a measured value in the rule's evidence.
	Figure(name string, value any, unit string)
	// Notef is a line of explanation in the evidence.
	Notef(format string, args ...any)
}
