package main

// A `tck run` of several targets runs them at once, each in a goroutine of
// this process: the engine (spec.Set.Run) keeps no state between targets,
// and the race rules of every target take their share of the processors
// from one semaphore (package spec). The targets' lines are printed in the
// run's order (the first unfinished target's as they come, a later
// target's once those before it are done; a long rule's progress lines at
// once), their logs are written to run.log in the same order, and their
// results are merged into one report in the order a sequential run gives.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/onceproof/tck/internal/stall"
)

// maxTargets bounds the targets running at once unless --jobs says fewer.
const maxTargets = 8

// console prints the targets' lines in the run's order: the head (the
// first target not done) as its lines come, the others buffered until
// the head reaches them. The log goes the same way into run.log.
type console struct {
	mu    sync.Mutex
	w     io.Writer
	log   io.Writer
	quiet bool
	names []string
	head  int
	bufs  [][]consoleLine
	logs  []bytes.Buffer
	done  []bool
}

type consoleLine struct {
	text   string
	always bool // printed with --quiet too
}

func newConsole(w, log io.Writer, quiet bool, names []string) *console {
	n := len(names)
	return &console{w: w, log: log, quiet: quiet, names: names, bufs: make([][]consoleLine, n), logs: make([]bytes.Buffer, n), done: make([]bool, n)}
}

func (c *console) line(i int, text string, always bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i == c.head {
		c.print(consoleLine{text, always})
		return
	}
	c.bufs[i] = append(c.bufs[i], consoleLine{text, always})
}

// live prints a progress line at once, naming its target unless it is
// the head (whose lines are the ones on the terminal) or named already.
func (c *console) live(i int, text string, named bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i != c.head && !named {
		text = c.names[i] + ": " + text
	}
	c.print(consoleLine{"  " + text, false})
}

// logger is target i's writer into run.log.
func (c *console) logger(i int) io.Writer {
	return writerFunc(func(p []byte) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if i == c.head {
			_, _ = c.log.Write(p)
			return
		}
		c.logs[i].Write(p)
	})
}

func (c *console) print(l consoleLine) {
	if l.always || !c.quiet {
		fmt.Fprintln(c.w, l.text)
	}
}

// finish marks target i done and moves the head past every done target,
// printing what each new head had buffered.
func (c *console) finish(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done[i] = true
	for c.head < len(c.done) && c.done[c.head] {
		c.head++
		if c.head < len(c.done) {
			for _, l := range c.bufs[c.head] {
				c.print(l)
			}
			_, _ = c.log.Write(c.logs[c.head].Bytes())
			c.bufs[c.head], c.logs[c.head] = nil, bytes.Buffer{}
		}
	}
}

type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

// interruptGrace is how long, on the kit's scheduled time, a run waits
// after an interrupt for its targets to end their rules and stop. A target
// still going then is abandoned: its rules are skipped, naming why, the
// report is written, and the process's exit removes what it created. So
// one Ctrl-C always ends the run. (A variable: the test of it waits less.)
var interruptGrace = 30 * time.Second

// runTargets runs every target of the plan, at most --jobs (else
// maxTargets) at once, and returns their outcomes in the plan's order. An
// interrupt cancels ctx: each target ends its rules and stops as a
// one-target run does, within interruptGrace.
func runTargets(ctx context.Context, cfg runConfig, logFile io.Writer, stderr io.Writer) []outcome {
	targets := cfg.p.targets
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.name
	}
	con := newConsole(stderr, logFile, cfg.quiet, names)
	at := maxTargets
	if cfg.jobs > 0 && cfg.jobs < at {
		at = cfg.jobs
	}
	slots := make(chan struct{}, at)
	type finished struct {
		i int
		o outcome
	}
	// Buffered: an abandoned target's goroutine may finish after the
	// run stopped listening.
	ch := make(chan finished, len(targets))
	for i, t := range targets {
		go func() {
			defer con.finish(i)
			slots <- struct{}{}
			defer func() { <-slots }()
			ch <- finished{i, runTarget(ctx, cfg, t, sink{
				line:    func(l string) { con.line(i, l, false) },
				errLine: func(l string) { con.line(i, l, true) },
				note:    func(l string) { con.live(i, l, false) },
				tnote:   func(l string) { con.live(i, t.name+": "+l, true) },
				log:     con.logger(i),
			})}
		}()
	}
	outs := make([]outcome, len(targets))
	ended := make([]bool, len(targets))
	interrupt, grace := ctx.Done(), (<-chan struct{})(nil)
	for left := len(targets); left > 0; {
		select {
		case f := <-ch:
			outs[f.i], ended[f.i] = f.o, true
			left--
		case <-interrupt:
			interrupt = nil
			gctx, cancel := stall.WithTimeout(context.Background(), interruptGrace)
			defer cancel()
			grace = gctx.Done()
		case <-grace:
			var stuck []string
			why := fmt.Sprintf("the run was interrupted and this target did not stop within %s of it: abandoned", interruptGrace)
			for i, t := range targets {
				if !ended[i] {
					outs[i] = interruptedTarget(t, why, why)
					stuck = append(stuck, t.name)
				}
			}
			// Where each abandoned goroutine waits, for whoever chases
			// why it did not stop: into run.log, not onto the terminal.
			con.mu.Lock()
			fmt.Fprintf(con.log, "\n== interrupt: %s did not stop within %s; the run's goroutines:\n", strings.Join(stuck, ", "), interruptGrace)
			_ = pprof.Lookup("goroutine").WriteTo(con.log, 1)
			con.mu.Unlock()
			for i := range targets {
				if !ended[i] {
					con.finish(i)
				}
			}
			con.mu.Lock()
			fmt.Fprintf(stderr, "tck run: %s did not stop within %s of the interrupt: abandoned, its rules skipped (where it waited is in run.log)\n", strings.Join(stuck, ", "), interruptGrace)
			con.mu.Unlock()
			return outs
		}
	}
	return outs
}
