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
	"sync"
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

// runTargets runs every target of the plan, at most --jobs (else
// maxTargets) at once, and returns their outcomes in the plan's order. An
// interrupt cancels ctx: each target ends its rules and stops as a
// one-target run does.
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
	outs := make([]outcome, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer con.finish(i)
			slots <- struct{}{}
			defer func() { <-slots }()
			outs[i] = runTarget(ctx, cfg, t, sink{
				line:    func(l string) { con.line(i, l, false) },
				errLine: func(l string) { con.line(i, l, true) },
				note:    func(l string) { con.live(i, l, false) },
				tnote:   func(l string) { con.live(i, t.name+": "+l, true) },
				log:     con.logger(i),
			})
		}()
	}
	wg.Wait()
	return outs
}
