package consumer

import (
	"github.com/onceproof/tck/suites/consumer/embedded"
	"testing"

	tck "github.com/onceproof/tck/suites/consumer"
)

// TestSQLiteDedupe runs every CO rule against the consumer that keeps its
// de-dupe records in a SQLite file of its own; the file lives in the
// test's temporary folder, one per rule, and every instance of a rule
// (the kit starts a new one after each crash) opens the same one.
func TestSQLiteDedupe(t *testing.T) {
	t.Parallel() // each Check is a world of its own; one report takes them all
	tck.Check(t, tck.Target{
		New:      NewSQLiteDedupe(t.TempDir()),
		Declared: SQLiteDedupeDeclared,
	}, embedded.NATS())
}
