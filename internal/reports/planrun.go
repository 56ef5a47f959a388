package reports

import (
	"fmt"
	"strings"
)

// planHazards puts a run's profile hazards on its first screen: a run
// whose declared pipeline has hazards exits as `tck plan --profile` does
// (1), whatever the rules found, since the rules ran on scratch topics
// and cannot clear the team's design (issue 25).
func (r *Report) planHazards() {
	pl := r.Plan
	if pl == nil || len(pl.Hazards) == 0 || (len(r.Results) == 0 && len(r.Targets) == 0) {
		return
	}
	var hs []string
	for i, h := range pl.Hazards {
		if i == 3 {
			hs = append(hs, fmt.Sprintf("and %d more", len(pl.Hazards)-3))
			break
		}
		hs = append(hs, fmt.Sprintf("%s %s at %s:%d", h.Rule, h.Check, pl.File, h.Line))
	}
	n := len(pl.Hazards)
	what := fmt.Sprintf("the declared pipeline (profile %s) has %d hazard%s: %s", pl.Profile, n, map[bool]string{true: "", false: "s"}[n == 1], strings.Join(hs, "; "))
	if r.Summary.ExitCode == ExitConformant {
		r.Summary.ExitCode = ExitMustFailed
		r.Summary.Conclusion = "not conformant: " + what + " (every MUST rule that applies passed)"
		return
	}
	r.Summary.Conclusion += "; " + what
	if r.Summary.ExitCode == ExitInconclusive {
		r.Summary.ExitCode = ExitMustFailed
	}
}
