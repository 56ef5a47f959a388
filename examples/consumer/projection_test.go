package consumer

import (
	"github.com/onceproof/tck/suites/consumer/embedded"
	"testing"

	tck "github.com/onceproof/tck/suites/consumer"
)

// TestProjection runs every CO rule against the projection as a subtest
// named by its id. The target names no broker, so each rule runs over an
// embedded NATS JetStream server of its own, which the option embedded.NATS()
// gives (set Target.Broker to run over another, and the option goes):
//
//	go test -run 'TestProjection/CO-1.1' -v
//
// runs one rule. Rules that need what the projection does not declare (a
// second scope, an outbox) are skipped with the reason; a rule the kit could
// not decide fails the test with its reason.
//
//	TCK_REPORT_DIR=$(mktemp -d) go test ./examples/consumer
//
// also writes the report bundle `tck run` writes (report.html, results.json,
// junit.xml, ...) into that folder; tck.ReportTo(dir) does it from the code.
func TestProjection(t *testing.T) {
	t.Parallel() // each Check is a world of its own; one report takes them all
	tck.Check(t, tck.Target{
		New:      New,
		Declared: Declared,
	}, embedded.NATS())
}
