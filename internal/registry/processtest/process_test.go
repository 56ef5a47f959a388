package processtest

import (
	"testing"

	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner/runnertest"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// runService starts a consumer/process kind as the CLI does (resolved from
// SUITE/NAME[=ADDRESS]) and runs the consumer rules against it.
func runService(t *testing.T, name, addr string, rules ...string) []verdict.Result {
	t.Helper()
	return runnertest.Target(t, registry.Targets(), target.Ref{Suite: "consumer", Name: name, Address: addr}, nil, rules...)
}

// The Go reference service, run as its own process and killed with SIGKILL
// at every crash point, passes every rule that applies to a black box;
// that nothing of the run is left in the TMPDIR (the build, the data
// directories) is checked by TestMain. The mutant services failing their rules is
// internal/selftest's TestConsumerKillMatrix.
func TestServiceReferencePassesEveryRule(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: runs a consumer service through every consumer rule (about a minute)")
	}
	t.Parallel() // TestMain: the repository's root, a TMPDIR of the package's own

	got, sum := runnertest.Table(runService(t, "process", "cmd:go run ./examples/consumer-service/go"))
	t.Log(sum)
	for id, v := range got {
		want := verdict.Pass
		if id == "CO-3.1" || id == "CO-4.1" || id == "CO-2.6" {
			want = verdict.NotApplicable // its own clock; no outbox the kit can reach; its acks are its own client's calls
		}
		if v != want {
			t.Errorf("reference service: %s is %s, want %s", id, v, want)
		}
	}
	if len(got) < 15 {
		t.Errorf("reference service: %d rules ran, want every consumer rule", len(got))
	}
}
