package eventstore

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// racers are a race rule's writer goroutines, started once per rule and
// reused by every trial.
//
// Why not a goroutine per writer per trial: a `go` statement queues the new
// goroutine on the spawning processor, and an idle second processor takes
// tens of microseconds to wake, longer than a whole in-memory trial. Measured
// on two cores, a run could settle into running every trial on one
// processor, with about 5% of trials contended. Racers that stay runnable
// between trials (spinning, yielding) keep every processor busy, so the
// next trial's writers are already running when it is released.
//
// Between trials a racer spins (yielding every spinsBeforeYield spins) for
// up to idleSpin, then parks: against a store whose calls take milliseconds
// (a database on the same machine) spinning would take its processor.
type racers struct {
	cur atomic.Pointer[racerTrial] // the latest trial

	mu     sync.Mutex
	cond   *sync.Cond
	quit   atomic.Bool
	exited sync.WaitGroup
}

// racerTrial is one release of the racers: writers 0..n-1 run job.
type racerTrial struct {
	gen  uint64
	n    int
	job  func(i int)
	busy sync.WaitGroup
}

// idleSpin is how long a racer spins for the next trial before it parks.
var idleSpin = 200 * time.Microsecond

// useRacers: trials use the rule's racers (false: a goroutine per writer,
// kept to measure against, see races_test.go).
var useRacers = true

func newRacers(size int) *racers {
	p := &racers{}
	p.cond = sync.NewCond(&p.mu)
	for i := range size {
		p.exited.Add(1)
		go p.loop(i)
	}
	return p
}

// run releases writers 0..n-1 on job and waits for them.
func (p *racers) run(n int, job func(i int)) {
	t := &racerTrial{n: n, job: job}
	if last := p.cur.Load(); last != nil {
		t.gen = last.gen + 1
	} else {
		t.gen = 1
	}
	t.busy.Add(n)
	p.mu.Lock()
	p.cur.Store(t)
	p.cond.Broadcast()
	p.mu.Unlock()
	t.busy.Wait()
}

// stop ends every racer and waits for them.
func (p *racers) stop() {
	p.mu.Lock()
	p.quit.Store(true)
	p.cond.Broadcast()
	p.mu.Unlock()
	p.exited.Wait()
}

// gen is the latest trial's generation (0 before the first).
func (p *racers) gen() uint64 {
	if t := p.cur.Load(); t != nil {
		return t.gen
	}
	return 0
}

func (p *racers) loop(i int) {
	defer p.exited.Done()
	var seen uint64
	for {
		since := time.Now()
		for spins := 0; p.gen() == seen; spins++ {
			if spins == spinsBeforeYield {
				spins = 0
				runtime.Gosched()
				if p.quit.Load() {
					return
				}
				if time.Since(since) > idleSpin {
					if !p.park(seen) {
						return
					}
					since = time.Now()
				}
			}
		}
		// One load: the trial, its n and its job belong together.
		t := p.cur.Load()
		seen = t.gen
		if i < t.n {
			t.job(i)
			t.busy.Done()
		}
	}
}

// park waits for a trial after seen; false: the racers are stopping.
func (p *racers) park(seen uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.gen() == seen && !p.quit.Load() {
		p.cond.Wait()
	}
	return !p.quit.Load()
}
