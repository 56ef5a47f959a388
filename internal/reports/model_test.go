package reports

import (
	"testing"

	"github.com/onceproof/tck/internal/verdict"
)

func res(level string, v verdict.Verdict) verdict.Result {
	return verdict.Result{Rule: "ES-1.1", Target: "t", Level: level, Verdict: v}
}

// TestSummarizeExitCodes pins the documented precedence: a failed MUST (1)
// over an unreachable target (4) over an undecided MUST or an empty run (2).
func TestSummarizeExitCodes(t *testing.T) {
	ran := []Target{{Status: "ran"}}
	down := []Target{{Status: "ran"}, {Status: "unavailable"}}
	cases := []struct {
		name    string
		results []verdict.Result
		targets []Target
		want    int
	}{
		{"all pass", []verdict.Result{res("MUST", verdict.Pass), res("MUST", verdict.NotApplicable)}, ran, ExitConformant},
		{"a SHOULD failed", []verdict.Result{res("MUST", verdict.Pass), res("SHOULD", verdict.Fail)}, ran, ExitConformant},
		{"a MUST failed", []verdict.Result{res("MUST", verdict.Pass), res("MUST", verdict.Fail)}, ran, ExitMustFailed},
		{"a MUST failed and a target is down", []verdict.Result{res("MUST", verdict.Fail)}, down, ExitMustFailed},
		{"a target is down", []verdict.Result{res("MUST", verdict.Pass)}, down, ExitUnavailable},
		{"unknown is not pass", []verdict.Result{res("MUST", verdict.Pass), res("MUST", verdict.Unknown)}, ran, ExitInconclusive},
		{"nothing decided", []verdict.Result{res("MUST", verdict.Skipped), res("MUST", verdict.NotApplicable)}, ran, ExitInconclusive},
		{"no results at all", nil, ran, ExitInconclusive},
	}
	for _, c := range cases {
		if got := Summarize(c.results, c.targets).ExitCode; got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
}
