package eventstore

import (
	"strings"
	"time"

	"github.com/onceproof/tck/internal/stall"
	"github.com/onceproof/tck/internal/verdict"
)

// stalledTrials are the race trials a pause of the kit's own process
// overlapped (package stall: the process was stopped, its host stalled).
// A pause cannot make a store keep two winners or lose a success, so such
// violations stand; but an append the kit timed out, or a setup or load of
// the kit's that failed, may be the pause's doing: that trial's violation
// is put down to the pause and the trials go on (a store that really has
// the defect shows it again in a trial the kit was scheduled through).
type stalledTrials struct {
	n       int // trials a pause overlapped
	excused int // violations put down to the pause
	longest time.Duration
	last    string // the last violation excused
}

// excuses records round rd (violation v, "" for none) and says whether
// v is put down to a pause of the kit.
func (s *stalledTrials) excuses(rd *round, v string) bool {
	p := stall.Since(rd.started)
	if !p.Paused() {
		return false
	}
	s.n++
	s.longest = max(s.longest, p.Longest.Len)
	kitSide := rd.at == nil || strings.HasPrefix(v, setupFailed) || strings.HasPrefix(v, loadFailed)
	if v == "" || (!kitSide && rd.indeterminate() == 0) {
		return false
	}
	s.excused++
	s.last = v
	return true
}

func (s *stalledTrials) figures(ev *verdict.Evidence) {
	if s.n == 0 {
		return
	}
	ev.Figure("trials a pause of the kit overlapped", s.n, "")
	ev.Figure("longest pause of the kit", s.longest.Seconds(), "s")
	if s.excused > 0 {
		ev.Figure("violations put down to a pause of the kit", s.excused, "")
		ev.Notef("%d trial(s) ended with an append the kit never learned the outcome of, or a setup or load of its own that failed, while the kit was not scheduled (longest pause %.1f s); not counted as violations, the last: %s", s.excused, s.longest.Seconds(), s.last)
		ev.SetupHazard("the kit's own process was not scheduled for %.1f s during the race trials (the process was stopped, or its host stalled): %d trial(s) could not be judged", s.longest.Seconds(), s.excused)
	}
}
