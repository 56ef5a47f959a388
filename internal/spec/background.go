package spec

import (
	"sync"
	"time"

	"github.com/onceproof/tck/internal/verdict"
)

// Workload is the background half of a rule that waits (a window to pass,
// an ack wait to end). Its workload starts before its spec runs, measures,
// and hands back a judge; the judge runs in the spec and turns what was
// measured into expectations on r. The set starts the workload of every
// selected rule at once (Ginkgo: before the first rule; go test: each
// parallel subtest its own), so the rules' waits overlap. A rule without
// waiting is the degenerate case and uses It.
type Workload struct {
	// Wait is how long the rule must wait by definition; Running reports it.
	Wait func() time.Duration
	// Gate, when set, runs first in the rule's spec and may end the rule
	// (r.Skipped, r.Unknown) before its workload starts.
	Gate Body
	// Ready, when set, says whether the set may start the workload before
	// its rule runs: false for a rule that Gate would end, so it starts nothing.
	Ready func() bool
	// Start starts the workload, in the background, and returns at once.
	Start func() Job
}

// Job is one started workload.
type Job struct {
	// Judged receives the workload's judge once the workload returned.
	Judged <-chan Body
	// End runs after the rule's spec, however it ended, with its evidence:
	// it stops what the workload left running.
	End func(ev *verdict.Evidence)
	// Stop stops the workload when its spec never ran or gave up on it
	// (the set's finish).
	Stop func()
}

// job is a started workload and what the set knows of it.
type job struct {
	Job
	started time.Time
	done    bool // its spec ended (under background.mu)
}

// background is a set's waiting rules and their started workloads.
type background struct {
	mu    sync.Mutex
	rules map[string]Workload
	jobs  map[string]*job
}

// Background registers rule id whose check is split into w's workload and
// the judge it returns. The rule's spec runs w.Gate, starts the workload
// unless the set already did, ends it however the spec ends, waits for the
// judge (the rule's deadline makes it unknown) and runs it.
func (s *Set) Background(id string, w Workload) {
	if s.bg.rules == nil {
		s.bg.rules = map[string]Workload{}
		s.bg.jobs = map[string]*job{}
	}
	s.bg.rules[id] = w
	s.It(id, func(r *R) {
		if w.Gate != nil {
			w.Gate(r)
		}
		j := s.start(id)
		r.DeferCleanup(func() {
			j.End(r.Ev)
			s.bg.mu.Lock()
			j.done = true
			s.bg.mu.Unlock()
		})
		var judge Body
		select {
		case judge = <-j.Judged:
		case <-r.Context().Done():
			r.Unknown("the workload of %s did not finish before the rule's deadline", id)
		}
		judge(r)
	})
}

// start starts id's workload once.
func (s *Set) start(id string) *job {
	s.bg.mu.Lock()
	defer s.bg.mu.Unlock()
	if j, ok := s.bg.jobs[id]; ok {
		return j
	}
	j := &job{Job: s.bg.rules[id].Start(), started: time.Now()}
	s.bg.jobs[id] = j
	return j
}

// prepare starts the workload of every selected waiting rule that is
// ready, then calls the suite's Prepare.
func (s *Set) prepare(ids []string) {
	for _, id := range ids {
		w, ok := s.bg.rules[id]
		if ok && (w.Ready == nil || w.Ready()) {
			s.start(id)
		}
	}
	if s.Prepare != nil {
		s.Prepare(ids)
	}
}

// finish calls the suite's Finish, then stops every workload still running
// and waits for it: one whose spec never ran (an interrupted run) or gave
// up on it.
func (s *Set) finish() {
	if s.Finish != nil {
		s.Finish()
	}
	s.bg.mu.Lock()
	jobs := make([]*job, 0, len(s.bg.jobs))
	for _, j := range s.bg.jobs {
		jobs = append(jobs, j)
	}
	s.bg.mu.Unlock()
	for _, j := range jobs {
		j.Stop()
	}
}

// Running is a started workload whose spec has not ended.
type Running struct {
	ID string
	// Left is the rest of its wait by definition (0 when past it).
	Left time.Duration
}

// Running lists the started workloads whose specs have not ended, for a
// suite's progress lines.
func (s *Set) Running() []Running {
	s.bg.mu.Lock()
	defer s.bg.mu.Unlock()
	var out []Running
	for id, j := range s.bg.jobs {
		if j.done {
			continue
		}
		var left time.Duration
		if w := s.bg.rules[id].Wait; w != nil {
			left = max(time.Until(j.started.Add(w())), 0)
		}
		out = append(out, Running{ID: id, Left: left})
	}
	return out
}

// Waits are the waits by definition of the given rules that would start a
// workload (Ready), for a suite's announcement of the longest.
func (s *Set) Waits(ids []string) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, id := range ids {
		w, ok := s.bg.rules[id]
		if !ok || w.Wait == nil || (w.Ready != nil && !w.Ready()) {
			continue
		}
		out[id] = w.Wait()
	}
	return out
}
