package spec

import (
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/verdict"
)

// fakeWork is a workload that hands back judge when released.
type fakeWork struct {
	mu      sync.Mutex
	starts  int
	ended   int
	stopped int
	release chan struct{}
}

func (fw *fakeWork) workload(wait time.Duration, ready bool, judge Body) Workload {
	return Workload{
		Wait:  func() time.Duration { return wait },
		Ready: func() bool { return ready },
		Start: func() Job {
			fw.mu.Lock()
			fw.starts++
			fw.mu.Unlock()
			judged := make(chan Body, 1)
			go func() { <-fw.release; judged <- judge }()
			return Job{
				Judged: judged,
				End:    func(ev *verdict.Evidence) { fw.mu.Lock(); fw.ended++; fw.mu.Unlock(); ev.Figure("ended", 1, "") },
				Stop:   func() { fw.mu.Lock(); fw.stopped++; fw.mu.Unlock() },
			}
		},
	}
}

// TestBackground: prepare starts the ready workloads once and no other; a
// spec judges what its workload handed back and ends it; Running lists the
// started whose specs have not ended; a workload that never hands back is
// unknown at the deadline; finish stops every started one.
func TestBackground(t *testing.T) {
	fw := &fakeWork{release: make(chan struct{})}
	never := &fakeWork{release: make(chan struct{})}
	s := New("eventstore")
	s.Timeout = 200 * time.Millisecond
	s.Background("ES-1.1", fw.workload(time.Minute, true, func(r *R) { r.Ev.Notef("judged") }))
	s.Background("ES-1.2", fw.workload(0, true, func(r *R) { r.Expect(1).To(Equal(2), "one is not two") }))
	s.Background("ES-1.3", fw.workload(0, false, func(r *R) {}))
	s.Background("ES-1.4", never.workload(0, true, func(r *R) {}))
	gated := fw.workload(0, true, func(r *R) {})
	gated.Gate = func(r *R) { r.Skipped("over budget") }
	s.Background("ES-1.5", gated)
	var prepared []string
	s.Prepare = func(ids []string) { prepared = ids }
	finished := false
	s.Finish = func() { finished = true }

	s.prepare([]string{"ES-1.1", "ES-1.2", "ES-1.3", "ES-1.4"})
	s.prepare([]string{"ES-1.1"})
	if fw.starts != 2 || never.starts != 1 || len(prepared) != 1 {
		t.Fatalf("prepare started %d+%d workloads (want 2+1), suite's Prepare got %v", fw.starts, never.starts, prepared)
	}
	if got := s.Waits([]string{"ES-1.1", "ES-1.3"}); len(got) != 1 || got["ES-1.1"] != time.Minute {
		t.Errorf("waits %v, want ES-1.1's minute only", got)
	}
	var long Running
	for _, ru := range s.Running() {
		if ru.ID == "ES-1.1" {
			long = ru
		}
	}
	if long.Left < 50*time.Second || len(s.Running()) != 3 {
		t.Errorf("running %v", s.Running())
	}
	close(fw.release)

	runWant(t, s, map[string]want{
		"ES-1.1": {verdict.Pass, "judged"},
		"ES-1.2": {verdict.Fail, "one is not two"},
		"ES-1.3": {verdict.Pass, "all checks held"},
		"ES-1.4": {verdict.Unknown, "did not finish before the rule's deadline"},
		"ES-1.5": {verdict.Skipped, "over budget"},
	})
	if fw.starts != 3 || fw.ended != 3 || never.ended != 1 {
		t.Errorf("workloads started %d (want 3: ES-1.3 by its spec, ES-1.5 not past its gate), ended %d+%d", fw.starts, fw.ended, never.ended)
	}
	if n := len(s.Running()); n != 0 {
		t.Errorf("%d still running after every spec ended", n)
	}
	s.finish()
	if !finished || fw.stopped != 3 || never.stopped != 1 {
		t.Errorf("finish: suite's Finish %v, stopped %d+%d", finished, fw.stopped, never.stopped)
	}
}
