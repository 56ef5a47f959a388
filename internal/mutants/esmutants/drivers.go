package esmutants

// Driver is a mutant driver adapter: the Python reference adapter
// (examples/eventstore-driver/python) with one defect, run as its own
// process through the driver protocol, as a team's store in another
// language is.
type Driver struct {
	Name, Defect string
	// Command runs the adapter, relative to the module root.
	Command string
	// MustFail are the rule ids the self-test asserts it fails.
	MustFail []string
}

// Drivers returns the mutant driver adapters.
func Drivers() []Driver {
	const dir = "python3 internal/mutants/esmutants/drivers/"
	return []Driver{
		{Name: "driver-check-then-insert", Defect: "checks the request id with a query before its write transaction, with no unique constraint on it (Python adapter)",
			Command: dir + "check_then_insert.py", MustFail: []string{"ES-2.3"}},
		{Name: "driver-create-as-version-conflict", Defect: "reports a creation conflict as a version conflict (Python adapter)",
			Command: dir + "create_as_version_conflict.py", MustFail: []string{"ES-1.3", "ES-1.7", "ES-2.2"}},
		{Name: "driver-flattened-errors", Defect: "answers every conflict with the generic status error (Python adapter)",
			Command: dir + "flattened_errors.py", MustFail: []string{"ES-1.3", "ES-1.4", "ES-1.5", "ES-1.7", "ES-1.10"}},
		{Name: "driver-closed-handle-answers", Defect: "close does not close: a closed handle goes on answering (Python adapter)",
			Command: dir + "closed_handle_answers.py", MustFail: []string{"ES-1.10"}},
	}
}
