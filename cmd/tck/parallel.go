package main

// A `tck run` of several targets runs each in a child process of its own,
// all at once: the targets share nothing, and Ginkgo keeps one suite per
// process. The child is this binary again, with the hidden command
// childCommand, the target's index and the run's own arguments; it parses
// them as the parent did, runs that one target as a one-target run would
// (its own stall heartbeat, signal handling and clean-up in main), and
// writes what it does as JSON values on file descriptor 3. The parent
// prints the targets' lines in the run's order (the first unfinished
// target's as they come, a later target's once those before it are done;
// a long rule's progress lines at once), writes their Ginkgo logs to
// ginkgo.log in the same order and merges their results into one report,
// in the order a sequential run gives.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/procs"
	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/stall"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// envProcessorsLock names, for a child, the file whose byte ranges are
// the run's shares of the processors, which the race rules of every target
// take (spec.ShareProcessors).
const envProcessorsLock = "TCK_PROCESSORS_LOCK"

// fileLock is a hold on a share of the processors: an exclusive lock on
// one of the first `shares` bytes of path (which the parent made), taken
// through the open file description (F_OFD_SETLK), so two holds conflict
// even within a process, and the kernel drops them when the child exits.
func fileLock(path string, shares int) func(ctx context.Context) (func(), error) {
	return func(ctx context.Context) (func(), error) {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("the run's processor lock: %w", err)
		}
		for {
			for i := range shares {
				lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: int64(i), Len: 1}
				if err := syscall.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk); err == nil {
					return func() { f.Close() }, nil // closing the description drops its lock
				}
			}
			select {
			case <-ctx.Done():
				f.Close()
				return nil, ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
}

// childCommand is the hidden command a child runs: childCommand INDEX NAME
// RUN-ARGS... (not in the usage: the parent alone starts it).
const childCommand = "__run-target"

// maxChildren bounds the targets running at once.
const maxChildren = 8

// childEvent is one JSON value a child writes to its parent.
type childEvent struct {
	Ready bool   `json:"ready,omitempty"` // the child handles signals from now on
	Line  string `json:"line,omitempty"`  // sink.line
	Err   string `json:"err,omitempty"`   // sink.errLine
	Note  string `json:"note,omitempty"`  // sink.note
	TNote string `json:"tnote,omitempty"` // sink.tnote
	Log   string `json:"log,omitempty"`   // a piece of ginkgo.log
	Done  *struct {
		Target  reports.Target   `json:"target"`
		Results []verdict.Result `json:"results"`
	} `json:"done,omitempty"`
}

// cmdRunTarget is the child: one target of its parent's run.
func cmdRunTarget(ctx context.Context, args []string, stdout, _ io.Writer) error {
	pipe := os.NewFile(3, "parent")
	if fi, err := pipe.Stat(); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return usagef("%s is internal to tck run", childCommand)
	}
	// Not inherited by what the target starts (a server, a service): the
	// parent's read ends when this process does.
	syscall.CloseOnExec(3)
	var mu sync.Mutex
	enc := json.NewEncoder(pipe)
	send := func(ev childEvent) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(ev) // a parent gone: nothing to tell
	}
	// main handles SIGINT and SIGTERM by now: the parent may forward them.
	send(childEvent{Ready: true})
	if len(args) < 2 {
		return usagef("%s INDEX NAME RUN-ARGS", childCommand)
	}
	i, err := strconv.Atoi(args[0])
	if err != nil {
		return usagef("%s: index %q", childCommand, args[0])
	}
	cfg, err := parseRun(args[2:], stdout)
	if err != nil {
		return err
	}
	if i < 0 || i >= len(cfg.p.targets) || cfg.p.targets[i].name != args[1] {
		return usagef("%s: target %d is not %s in this plan", childCommand, i, args[1])
	}
	// The heartbeat of the process that runs the rules (package stall).
	defer stall.Hold()()
	if path := os.Getenv(envProcessorsLock); path != "" {
		defer spec.ShareProcessors(fileLock(path, spec.ProcessorShares()))()
	}
	o := runTarget(ctx, cfg, cfg.p.targets[i], sink{
		line:    func(l string) { send(childEvent{Line: l}) },
		errLine: func(l string) { send(childEvent{Err: l}) },
		note:    func(l string) { send(childEvent{Note: l}) },
		tnote:   func(l string) { send(childEvent{TNote: l}) },
		log:     writerFunc(func(p []byte) { send(childEvent{Log: string(p)}) }),
	})
	done := childEvent{}
	done.Done = &struct {
		Target  reports.Target   `json:"target"`
		Results []verdict.Result `json:"results"`
	}{o.target, o.results}
	send(done)
	return nil
}

type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

// lockedWriter serializes the lines of several targets onto one stream.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// console prints the targets' lines in the run's order: the head (the
// first target not done) as its lines come, the others buffered until
// the head reaches them. Ginkgo logs go the same way into ginkgo.log.
type console struct {
	mu    *sync.Mutex
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

func (c *console) writeLog(i int, p string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i == c.head {
		_, _ = io.WriteString(c.log, p)
		return
	}
	c.logs[i].WriteString(p)
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

// child is one running target.
type child struct {
	mu      sync.Mutex
	cmd     *exec.Cmd
	ready   bool
	exited  bool
	pending []os.Signal
}

// signal forwards an interrupt, held until the child handles signals (a
// signal before that would kill it without its report or clean-up), also
// when it is not started yet.
func (c *child) signal(s os.Signal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.exited:
	case c.ready:
		_ = c.cmd.Process.Signal(s)
	default:
		c.pending = append(c.pending, s)
	}
}

func (c *child) markReady() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ready = true
	for _, s := range c.pending {
		_ = c.cmd.Process.Signal(s)
	}
	c.pending = nil
}

// runChildren runs every target of the plan in a child of its own, at
// most maxChildren at once, and returns their outcomes in the plan's order.
// An interrupt (SIGINT, SIGTERM; a second one too) is forwarded to each
// child, which ends its rules and cleans up as a one-target run does; the
// parent waits for all of them.
func runChildren(ctx context.Context, exe string, cfg runConfig, logFile io.Writer, stderr io.Writer) []outcome {
	targets := cfg.p.targets
	n := len(targets)
	mu := &sync.Mutex{}
	con := &console{mu: mu, w: stderr, log: logFile, quiet: cfg.quiet, bufs: make([][]consoleLine, n), logs: make([]bytes.Buffer, n), done: make([]bool, n)}
	for _, t := range targets {
		con.names = append(con.names, t.name)
	}
	// A child's own stray output (a crash) goes to stderr as it comes.
	raw := lockedWriter{mu, stderr}
	children := make([]*child, n)
	for i := range children {
		children[i] = &child{}
	}

	// Forward every signal the run gets; a cancel with no signal behind it
	// is forwarded as SIGTERM.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	allDone := make(chan struct{})
	forward := func(s os.Signal) {
		for _, c := range children {
			c.signal(s)
		}
	}
	go func() {
		cancelled, got := ctx.Done(), 0
		for {
			select {
			case s := <-sigs:
				got++
				forward(s)
			case <-cancelled:
				cancelled = nil
				if got == 0 {
					select {
					case s := <-sigs:
						got++
						forward(s)
					case <-time.After(200 * time.Millisecond):
						got++
						forward(syscall.SIGTERM)
					case <-allDone:
						return
					}
				}
			case <-allDone:
				return
			}
		}
	}()

	outs := make([]outcome, n)
	at := maxChildren
	if cfg.jobs > 0 && cfg.jobs < at {
		at = cfg.jobs
	}
	slots := make(chan struct{}, at)
	// The race rules of every target take one lock of the run's
	// (spec.ShareProcessors), so two never run at once; the rest overlap.
	lock, err := os.CreateTemp("", "tck-processors-*.lock")
	if err == nil {
		lock.Close()
		defer os.Remove(lock.Name())
		cfg.processorsLock = lock.Name()
	}
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			if ctx.Err() != nil {
				outs[i] = interruptedTarget(t, "the run was interrupted", "the run was interrupted before this target started")
			} else {
				outs[i] = runChild(ctx, exe, cfg, i, t, children[i], con, raw)
			}
			<-slots
			con.finish(i)
		}()
	}
	wg.Wait()
	close(allDone)
	return outs
}

// runChild runs target i in a child and waits for it.
func runChild(ctx context.Context, exe string, cfg runConfig, i int, t planned, c *child, con *console, raw io.Writer) outcome {
	r, w, err := os.Pipe()
	if err != nil {
		return lostChild(ctx, cfg, t, fmt.Sprintf("the kit could not start its process for this target: %v", err))
	}
	defer r.Close()
	cmd := procs.Grouped(exec.Command(exe, append([]string{childCommand, strconv.Itoa(i), t.name}, cfg.args...)...))
	cmd.Cancel = nil // no context: interrupts are forwarded (child.signal), the parent's death is Pdeathsig
	cmd.ExtraFiles = []*os.File{w}
	if cfg.processorsLock != "" {
		cmd.Env = append(os.Environ(), envProcessorsLock+"="+cfg.processorsLock)
	}
	cmd.Stdout, cmd.Stderr = raw, raw
	c.mu.Lock()
	c.cmd = cmd
	err = cmd.Start()
	c.mu.Unlock()
	w.Close() // the child holds the write end: EOF when it exits
	if err != nil {
		return lostChild(ctx, cfg, t, fmt.Sprintf("the kit could not start its process for this target: %v", err))
	}
	var done *outcome
	dec := json.NewDecoder(r)
	dec.UseNumber() // figures keep their integers exact (a 64-bit seed)
	for {
		var ev childEvent
		if err := dec.Decode(&ev); err != nil {
			break
		}
		switch {
		case ev.Ready:
			c.markReady()
		case ev.Line != "":
			con.line(i, ev.Line, false)
		case ev.Err != "":
			con.line(i, ev.Err, true)
		case ev.Note != "":
			con.live(i, ev.Note, false)
		case ev.TNote != "":
			con.live(i, t.name+": "+ev.TNote, true)
		case ev.Log != "":
			con.writeLog(i, ev.Log)
		case ev.Done != nil:
			for k := range ev.Done.Results {
				plainFigures(ev.Done.Results[k].Evidence)
			}
			done = &outcome{target: ev.Done.Target, results: ev.Done.Results}
		}
	}
	_, _ = io.Copy(io.Discard, r) // never leave the child blocked on a full pipe
	werr := cmd.Wait()
	c.mu.Lock()
	c.exited = true
	c.mu.Unlock()
	if done != nil {
		return *done
	}
	why := "it ended without its results"
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		why = fmt.Sprintf("it ended (%s) without its results", ee.ProcessState)
	}
	return lostChild(ctx, cfg, t, "the kit's process for this target failed: "+why)
}

// lostChild is a target whose child gave no results: skipped when the run
// was interrupted, else unknown (the kit's failure, never the target's).
func lostChild(ctx context.Context, cfg runConfig, t planned, why string) outcome {
	if ctx.Err() != nil {
		return interruptedTarget(t, "the run was interrupted", "the run was interrupted: "+why)
	}
	o := outcome{target: reports.Target{Info: target.Info{Name: t.name, Suite: t.kind.Suite, Mode: t.ref.Mode()}, Status: "ran", Error: why}}
	for _, r := range catalog.All(t.kind.Suite) {
		res := verdict.Result{Rule: r.ID, Suite: r.Suite, Target: t.name, Level: string(r.Level), Kind: string(r.Kind),
			Title: r.Title, Verdict: verdict.Unknown, Reason: why, Evidence: &verdict.Evidence{}}
		if len(cfg.p.rules) > 0 && !contains(cfg.p.rules, r.ID) {
			res.Verdict, res.Reason = verdict.Skipped, "filtered out by --rule"
		}
		o.results = append(o.results, res)
	}
	return o
}

// plainFigures turns the JSON numbers of a child's figures back into the
// Go values the reports render (int, float64), as in a one-process run.
func plainFigures(ev *verdict.Evidence) {
	if ev == nil {
		return
	}
	for k := range ev.Figures {
		ev.Figures[k].Value = plainValue(ev.Figures[k].Value)
	}
}

func plainValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return int(i)
		}
		f, _ := x.Float64()
		return f
	case []any:
		for k := range x {
			x[k] = plainValue(x[k])
		}
	case map[string]any:
		for k := range x {
			x[k] = plainValue(x[k])
		}
	}
	return v
}
