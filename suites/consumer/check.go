package consumer

import (
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/verdict"
)

// Check runs every CO rule against target from a plain Go test, the way
// testing/fstest.TestFS does for a file system: one call, a factory in, one
// subtest per rule out. A fail or unknown verdict fails the subtest with its
// reason; not-applicable and skipped verdicts are logged as skips. rules,
// when given, limits the run to those ids.
func Check(t *testing.T, target Target, rules ...string) []verdict.Result {
	t.Helper()
	results := runner.Run("consumer/under-test", func() { Register(target) }, runner.Options{Rules: rules})
	for _, res := range results {
		t.Run(res.Rule, func(t *testing.T) {
			switch res.Verdict {
			case verdict.Pass:
				t.Logf("pass: %s", res.Reason)
			case verdict.Fail, verdict.Unknown:
				var b strings.Builder
				if res.Evidence != nil {
					for _, n := range res.Evidence.Notes {
						b.WriteString("\n  " + n)
					}
				}
				t.Errorf("%s %s: %s: %s%s", res.Rule, res.Title, res.Verdict, res.Reason, b.String())
			default:
				t.Skipf("%s: %s", res.Verdict, res.Reason)
			}
		})
	}
	return results
}
