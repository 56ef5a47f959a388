package esdriver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/internal/procs"
)

// Config is how to start the adapter.
type Config struct {
	// Name names the adapter in messages ("adapter").
	Name string
	// Args is the argv of one adapter process.
	Args []string
	// Dir is its working directory ("" is the kit's).
	Dir string
	// Env is added to the kit's environment.
	Env map[string]string
	// Processes is how many adapter processes the kit starts over one
	// database when the adapter says they share their data (hello
	// "sharedData"); default 2. Handles are opened on them in turn, so a
	// rule's handles are different service instances.
	Processes int
	// StartWait bounds the start of one process up to its hello reply
	// (default 2 minutes: a JVM or a build may be slow to start).
	StartWait time.Duration
}

// ProtocolError is a call the adapter did not answer within the protocol:
// it exited, wrote something that is not a reply, or the reply never came.
// The call's outcome is indeterminate; it is never a conflict.
type ProtocolError struct {
	Problem string // what went wrong, with the adapter's last output
}

func (e *ProtocolError) Error() string { return "driver protocol: " + e.Problem }

// Hello is what the adapter said about itself.
type Hello struct {
	Protocol     int
	Store        string
	SharedData   bool
	Capabilities Capabilities
}

// Driver runs the adapter processes and opens handles on them.
type Driver struct {
	cfg   Config
	hello Hello
	procs []*proc
	next  atomic.Uint64

	mu       sync.Mutex
	problems []string // every protocol problem so far, with the adapter's output
	stopped  bool
}

// Start starts the first adapter process and says hello; when the adapter
// shares its data between processes, it starts the others too. On error
// nothing is left running.
func Start(ctx context.Context, cfg Config) (*Driver, error) {
	if len(cfg.Args) == 0 {
		return nil, errors.New("esdriver: empty command")
	}
	if cfg.Name == "" {
		cfg.Name = "adapter"
	}
	if cfg.Processes <= 0 {
		cfg.Processes = 2
	}
	if cfg.StartWait <= 0 {
		cfg.StartWait = 2 * time.Minute
	}
	d := &Driver{cfg: cfg}
	first := &proc{d: d, n: 1}
	d.procs = []*proc{first}
	h, err := first.begin(ctx)
	if err != nil {
		_ = d.Stop()
		return nil, err
	}
	d.hello = h
	if h.SharedData {
		for i := 2; i <= cfg.Processes; i++ {
			p := &proc{d: d, n: i}
			d.procs = append(d.procs, p)
			if _, err := p.begin(ctx); err != nil {
				_ = d.Stop()
				return nil, err
			}
		}
	}
	return d, nil
}

// Hello is the first process's hello reply.
func (d *Driver) Hello() Hello { return d.hello }

// Processes is how many adapter processes run over the database.
func (d *Driver) Processes() int { return len(d.procs) }

// Open opens a handle on the next process in turn (restarting it first if
// it died).
func (d *Driver) Open(ctx context.Context) (*Store, error) {
	p := d.procs[int(d.next.Add(1)-1)%len(d.procs)]
	run, err := p.ensure(ctx)
	if err != nil {
		return nil, err
	}
	rep, err := run.call(ctx, request{Op: opOpen})
	if err != nil {
		return nil, err
	}
	if err := rep.err("open", nil); err != nil {
		return nil, err
	}
	if rep.Handle == "" {
		return nil, run.broke(fmt.Sprintf("the reply to open (request %d) names no handle", *rep.ID))
	}
	return &Store{run: run, handle: rep.Handle}, nil
}

// Problems is the number of protocol problems seen so far.
func (d *Driver) Problems() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.problems)
}

// ProblemsSince returns the problems after the first n.
func (d *Driver) ProblemsSince(n int) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n >= len(d.problems) {
		return nil
	}
	return append([]string(nil), d.problems[n:]...)
}

func (d *Driver) problem(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.stopped {
		d.problems = append(d.problems, s)
	}
}

// Tail is the last output of every adapter process (stderr, and stdout
// that was not a reply), at most max bytes of each.
func (d *Driver) Tail(max int) string {
	var out []string
	for _, p := range d.procs {
		if t := p.ring.render(max); t != "" {
			out = append(out, t)
		}
	}
	return strings.Join(out, "\n")
}

// Stop ends every adapter process: its stdin closed (the protocol's
// "exit when stdin ends"), SIGKILL to its process group after a grace,
// reaped.
func (d *Driver) Stop() error {
	d.mu.Lock()
	d.stopped = true
	d.mu.Unlock()
	var errs []error
	for _, p := range d.procs {
		errs = append(errs, p.stop(2*time.Second))
	}
	return errors.Join(errs...)
}

// proc is one adapter process slot: its current run, restarted when dead.
type proc struct {
	d    *Driver
	n    int
	ring ring

	mu      sync.Mutex
	cur     *run
	runs    int
	stopped bool
}

// begin starts the first run and checks its hello.
func (p *proc) begin(ctx context.Context) (Hello, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, h, err := p.start(ctx)
	if err != nil {
		return Hello{}, err
	}
	p.cur = r
	return h, nil
}

// ensure returns the current run, restarting a dead one.
func (p *proc) ensure(ctx context.Context) (*run, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return nil, errors.New("esdriver: the driver was stopped")
	}
	if p.cur != nil && !p.cur.dead() {
		return p.cur, nil
	}
	if p.cur != nil {
		p.cur.kill()
	}
	r, _, err := p.start(ctx)
	if err != nil {
		// A rule that cannot get its handle because the adapter does not
		// come back is the adapter's problem, not the store's behaviour.
		p.d.problem("restarting " + p.name() + ": " + err.Error())
		return nil, &ProtocolError{Problem: "restarting " + p.name() + ": " + err.Error()}
	}
	p.cur = r
	return r, nil
}

func (p *proc) name() string {
	if len(p.d.procs) > 1 || p.n > 1 {
		return fmt.Sprintf("%s #%d", p.d.cfg.Name, p.n)
	}
	return p.d.cfg.Name
}

// start starts one run and says hello; p.mu is held.
func (p *proc) start(ctx context.Context) (*run, Hello, error) {
	p.runs++
	cfg := p.d.cfg
	cmd := procs.Grouped(exec.Command(cfg.Args[0], cfg.Args[1:]...))
	cmd.Cancel = nil
	cmd.Dir = cfg.Dir
	cmd.Env = os.Environ()
	for k, v := range cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, Hello{}, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, Hello{}, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		_ = outR.Close()
		_ = outW.Close()
		return nil, Hello{}, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	r := &run{p: p, n: p.runs, cmd: cmd, stdin: stdin, pending: map[uint64]chan reply{}, done: make(chan struct{}), exited: make(chan struct{})}
	err = leftovers.Create(func() error {
		err := cmd.Start()
		_ = outW.Close()
		_ = errW.Close()
		if err != nil {
			_ = outR.Close()
			_ = errR.Close()
			return err
		}
		pid := cmd.Process.Pid
		untrack := leftovers.Track(fmt.Sprintf("%s process %d (%s)", p.name(), pid, cfg.Args[0]), func() error {
			killGroup(pid)
			select {
			case <-r.exited:
			case <-time.After(5 * time.Second):
			}
			return nil
		})
		var copies sync.WaitGroup
		copies.Add(2)
		go func() { defer copies.Done(); r.readReplies(outR); _ = outR.Close() }()
		go func() { defer copies.Done(); p.ring.read(errR, r.n, "stderr"); _ = errR.Close() }()
		go func() {
			werr := cmd.Wait()
			killGroup(pid) // what it left in its group goes with it
			copiesDone := make(chan struct{})
			go func() { copies.Wait(); close(copiesDone) }()
			select {
			case <-copiesDone:
			case <-time.After(2 * time.Second):
				_ = outR.Close()
				_ = errR.Close()
			}
			untrack()
			r.fail(fmt.Sprintf("%s exited (%v)", p.name(), exitString(werr)))
			close(r.exited)
		}()
		return nil
	})
	if err != nil {
		if errors.Is(err, leftovers.ErrClosing) {
			for _, f := range []*os.File{outR, outW, errR, errW} {
				_ = f.Close()
			}
			_ = stdin.Close()
		}
		return nil, Hello{}, fmt.Errorf("starting %s (%s): %w", p.name(), cfg.Args[0], err)
	}
	hctx, cancel := context.WithTimeout(ctx, cfg.StartWait)
	defer cancel()
	rep, err := r.call(hctx, request{Op: opHello, Protocol: Version})
	if err == nil {
		err = rep.err("hello", nil)
	}
	if err == nil && rep.Protocol != Version {
		err = fmt.Errorf("%s speaks protocol %d, the kit speaks %d", p.name(), rep.Protocol, Version)
	}
	if err != nil {
		r.kill()
		var pe *ProtocolError
		if errors.As(err, &pe) { // it holds the last output already
			return nil, Hello{}, fmt.Errorf("%s did not say hello: %s", p.name(), pe.Problem)
		}
		return nil, Hello{}, fmt.Errorf("%s did not say hello: %v; its last output: %s", p.name(), err, orNothing(p.ring.render(1200)))
	}
	h := Hello{Protocol: rep.Protocol, Store: rep.Store, SharedData: rep.SharedData}
	if len(rep.Capabilities) > 0 {
		if err := json.Unmarshal(rep.Capabilities, &h.Capabilities); err != nil {
			r.kill()
			return nil, Hello{}, fmt.Errorf("%s: hello capabilities: %v", p.name(), err)
		}
	}
	return r, h, nil
}

// stop ends the process for good.
func (p *proc) stop(grace time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	if p.cur == nil {
		return nil
	}
	r := p.cur
	r.closing.Store(true)
	_ = r.stdin.Close()
	select {
	case <-r.exited:
		return nil
	case <-time.After(grace):
	}
	r.kill()
	select {
	case <-r.exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s was sent SIGKILL and not reaped within 10s", p.name())
	}
}

func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

func exitString(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

func orNothing(s string) string {
	if s == "" {
		return "(nothing)"
	}
	return "\n" + s
}

// run is one run of an adapter process: its requests in flight.
type run struct {
	p     *proc
	n     int
	cmd   *exec.Cmd
	stdin io.WriteCloser

	wmu     sync.Mutex // one line at a time on stdin
	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]chan reply
	problem string        // set once, before done closes
	done    chan struct{} // closed when the run broke or exited
	exited  chan struct{} // closed when the process was reaped
	closing atomic.Bool   // the kit is stopping it: its exit is no problem
}

func (r *run) dead() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL to the run's group.
func (r *run) kill() {
	r.closing.Store(true)
	killGroup(r.cmd.Process.Pid)
}

// fail marks the run broken with problem: every call in flight and every
// later one fails with it. The first problem of a run is recorded with the
// adapter's last output, unless the kit itself is ending the run.
func (r *run) fail(problem string) {
	r.mu.Lock()
	if r.problem != "" {
		r.mu.Unlock()
		return
	}
	if !r.closing.Load() {
		// Give the adapter's stderr a moment to arrive: a crash prints
		// its traceback as it dies.
		r.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
		r.mu.Lock()
		if r.problem != "" {
			r.mu.Unlock()
			return
		}
	}
	r.problem = fmt.Sprintf("%s; its last output: %s", problem, orNothing(r.p.ring.render(1500)))
	// Recorded before the waiting calls wake: a caller that got the error
	// finds the problem recorded.
	if !r.closing.Load() {
		r.p.d.problem(r.problem)
	}
	for id, ch := range r.pending {
		close(ch)
		delete(r.pending, id)
	}
	close(r.done)
	r.mu.Unlock()
}

// broke records a protocol problem of this run and kills it (its stream of
// replies can no longer be trusted); the error is the call's.
func (r *run) broke(problem string) error {
	r.fail(problem)
	r.kill()
	return &ProtocolError{Problem: r.reason()}
}

func (r *run) reason() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.problem
}

// hangAfter is the least time a call's deadline must leave the adapter for
// a missing reply to be the adapter's problem (a hang) rather than the
// caller's choice.
const hangAfter = time.Second

// call sends req and waits for its reply. A done ctx before the request is
// sent is its error and nothing is sent; a done ctx after is an
// indeterminate call (a deadline is recorded as a reply that never came).
func (r *run) call(ctx context.Context, req request) (reply, error) {
	if err := ctx.Err(); err != nil {
		return reply{}, err
	}
	ch := make(chan reply, 1)
	r.mu.Lock()
	if r.problem != "" {
		r.mu.Unlock()
		return reply{}, &ProtocolError{Problem: r.reason()}
	}
	r.nextID++
	req.ID = r.nextID
	r.pending[req.ID] = ch
	r.mu.Unlock()
	line, err := json.Marshal(req)
	if err != nil {
		r.forget(req.ID)
		return reply{}, fmt.Errorf("esdriver: encoding %s: %w", req.Op, err)
	}
	line = append(line, '\n')
	sent := time.Now()
	r.wmu.Lock()
	_, werr := r.stdin.Write(line)
	r.wmu.Unlock()
	if werr != nil {
		r.forget(req.ID)
		// A broken pipe usually means the adapter is exiting: its exit
		// (status and last words) is the problem to name, not the write.
		select {
		case <-r.done:
			return reply{}, &ProtocolError{Problem: r.reason()}
		case <-time.After(5 * time.Second):
		}
		return reply{}, r.broke(fmt.Sprintf("writing request %d (%s) to %s: %v", req.ID, req.Op, r.p.name(), werr))
	}
	select {
	case rep, ok := <-ch:
		if !ok {
			return reply{}, &ProtocolError{Problem: r.reason()}
		}
		return rep, nil
	case <-ctx.Done():
		r.forget(req.ID)
		// A deadline is the adapter's hang only when it left the adapter
		// time to answer: a caller that gave its call less (ES-1.16 cuts
		// calls at microseconds) chose the outcome itself.
		if dl, ok := ctx.Deadline(); errors.Is(ctx.Err(), context.DeadlineExceeded) && (!ok || dl.Sub(sent) >= hangAfter) {
			problem := fmt.Sprintf("no reply to request %d (%s) from %s before the call's deadline; its last output: %s", req.ID, req.Op, r.p.name(), orNothing(r.p.ring.render(1500)))
			r.p.d.problem(problem)
			return reply{}, &ProtocolError{Problem: problem}
		}
		return reply{}, fmt.Errorf("%w (request %d sent, its outcome unknown)", ctx.Err(), req.ID)
	}
}

func (r *run) forget(id uint64) {
	r.mu.Lock()
	delete(r.pending, id)
	r.mu.Unlock()
}

// readReplies reads the adapter's stdout: one reply per line. Anything
// else breaks the run.
func (r *run) readReplies(rd io.Reader) {
	br := bufio.NewReaderSize(rd, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if problem := r.deliver(line); problem != "" {
				r.p.ring.add(r.n, "stdout", string(bytes.TrimRight(line, "\r\n")))
				_ = r.broke(problem)
				_, _ = io.Copy(io.Discard, br)
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// deliver hands one reply line to its caller; a non-empty result is the
// protocol problem the line is.
func (r *run) deliver(line []byte) string {
	var rep reply
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&rep); err != nil {
		return fmt.Sprintf("%s wrote a line on stdout that is not a JSON reply (%v): %s", r.p.name(), err, quote(line))
	}
	if rep.ID == nil || rep.Status == "" {
		return fmt.Sprintf("%s wrote a reply without id or status: %s", r.p.name(), quote(line))
	}
	r.mu.Lock()
	ch, ok := r.pending[*rep.ID]
	delete(r.pending, *rep.ID)
	issued := *rep.ID <= r.nextID
	r.mu.Unlock()
	if !ok {
		if issued {
			return "" // the caller gave up on it (its context ended)
		}
		return fmt.Sprintf("%s replied to request %d, which the kit never sent: %s", r.p.name(), *rep.ID, quote(line))
	}
	ch <- rep
	return ""
}

func quote(line []byte) string {
	s := strings.TrimSpace(string(line))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return fmt.Sprintf("%q", s)
}
