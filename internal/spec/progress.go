package spec

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// A rule that runs longer than ProgressAfter and reports its progress
// (R.Progress) has a line printed every ProgressEvery: on the terminal and
// in ginkgo.log under tck run, in the test's log under Check, on
// GinkgoWriter under an author's Register.
var (
	ProgressAfter = 5 * time.Second
	ProgressEvery = 5 * time.Second
)

// progress is what a rule last said of how far it is.
type progress struct {
	mu          sync.Mutex
	done, total int
	unit        string
	said        bool
}

// Progress says how far a long rule is: done of total units ("steps",
// "events"). Call it as often as is convenient; the driver prints the
// latest at most every ProgressEvery, once the rule has run
// ProgressAfter, so a rule of a minute shows what it is doing and what is
// left.
func (r *R) Progress(done, total int, unit string) {
	if r.prog == nil {
		return
	}
	r.prog.mu.Lock()
	r.prog.done, r.prog.total, r.prog.unit, r.prog.said = done, total, unit, true
	r.prog.mu.Unlock()
}

func (p *progress) line(id string, elapsed time.Duration) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.said {
		return "", false
	}
	return fmt.Sprintf("%s: %d of %d %s done (%s)", id, p.done, p.total, p.unit, elapsed.Round(time.Second)), true
}

// sink, when set (the CLI's runner), receives every progress line.
var sink atomic.Pointer[func(line string)]

// ProgressTo sends the progress lines of every rule to fn until the
// returned function is called (the CLI's runner: the terminal and
// ginkgo.log).
func ProgressTo(fn func(line string)) func() {
	old := sink.Swap(&fn)
	return func() { sink.Store(old) }
}

// watch prints r's progress while the rule runs, through out unless a sink
// is set; the returned function stops it.
func watch(r *R, out func(line string)) func() {
	r.prog = &progress{}
	stop := make(chan struct{})
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		t := time.NewTimer(ProgressAfter)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-r.ctx.Done():
				return // past its deadline a hung body says nothing more
			case <-t.C:
			}
			if l, ok := r.prog.line(r.ID, time.Since(start)); ok {
				if fn := sink.Load(); fn != nil {
					(*fn)(l)
				} else if out != nil {
					out(l)
				}
			}
			t.Reset(ProgressEvery)
		}
	}()
	return func() { close(stop); <-done }
}
