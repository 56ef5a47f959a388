package reports

import (
	"fmt"
	"time"

	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/verdict"
)

// PlanReport is the report of a static analysis alone (tck plan --profile
// --out DIR): the profile's hazards with their timelines and the
// acknowledgement table, no rule run.
func PlanReport(pl *profile.Plan, kit Kit, command string, at time.Time) *Report {
	r := &Report{Kit: kit, Run: Run{Command: command, Started: at, Finished: at}, Plan: pl}
	r.Finish()
	return r
}

// planSummary is the summary of a report with a plan and no rule run:
// exit 1 with a hazard, 0 without, as tck plan --profile exits.
func planSummary(pl *profile.Plan) Summary {
	s := Summary{Counts: map[verdict.Verdict]int{}}
	switch n := len(pl.Hazards); n {
	case 0:
		s.ExitCode, s.Conclusion = ExitConformant, fmt.Sprintf("static analysis of profile %s: no hazard found (nothing was started)", pl.Profile)
	default:
		s.ExitCode, s.Conclusion = ExitMustFailed, fmt.Sprintf("static analysis of profile %s: %d hazard%s (nothing was started)", pl.Profile, n, map[bool]string{true: "", false: "s"}[n == 1])
	}
	return s
}
