// Package procs starts and supervises the child processes the kit drives as
// black boxes (a consumer service, an HTTP API): a command split as a shell
// would split it (or run by `sh -c`), environment variables and a `{port}`
// placeholder, stdout and stderr kept in a bounded ring of lines for the
// evidence, a wait until it listens or is ready, SIGKILL, a restart with the
// same configuration, and a stop that reaps it.
//
// Every process is registered with internal/leftovers before it exists and
// runs in a process group of its own, which a kill, a stop and the leftovers
// registry all signal as a whole (a `go run` or `sh -c` child is not left
// behind by its parent's death); on Linux the direct child also gets SIGKILL
// when the kit dies however it dies (Pdeathsig).
//
// Typical use:
//
//	p, err := procs.Start(ctx, procs.Config{Name: "consumer", Command: "python3 svc.py --port {port}", Port: port})
//	err = p.WaitListening(ctx, fmt.Sprintf("127.0.0.1:%d", port))
//	p.Kill()             // SIGKILL, reaped
//	err = p.Restart(ctx) // same command, environment and port
//	fmt.Print(p.Tail(4096))
//	p.Stop()
package procs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/onceproof/tck/internal/leftovers"
)

// Config is how to start a process; Restart reuses it unchanged.
type Config struct {
	// Name is how messages and the output ring name the process ("consumer W1").
	Name string
	// Command is the command line. Without Shell it is split as a shell
	// would split it (quotes and backslashes, no expansion); with Shell it
	// is run by `sh -c`.
	Command string
	Shell   bool
	// Args, when set, is the argv itself (Command is then only a label).
	Args []string
	// Env is added to the kit's environment (it wins over a variable of the
	// same name there).
	Env map[string]string
	// Dir is the working directory ("" is the kit's).
	Dir string
	// Port, when not 0, replaces every "{port}" in Command, Args and Env values.
	Port int
	// Lines bounds the output ring (default 2000 lines, across restarts).
	Lines int
	// Kill, when set, ends what a run stands for where a signal to its
	// process group cannot reach (a container the docker CLI runs: `docker
	// kill`). It is called with the run's pid before every SIGKILL of the
	// group: Kill, Restart, Stop and the leftovers registry's removal.
	Kill func(pid int)
}

// Line is one line the process wrote.
type Line struct {
	At     time.Time
	Run    int    // 1 for the first start, 2 after the first restart...
	Stream string // "stdout" or "stderr"
	Text   string
}

func (l Line) String() string {
	return fmt.Sprintf("%s [run %d %s] %s", l.At.UTC().Format("15:04:05.000"), l.Run, l.Stream, l.Text)
}

// Proc is a supervised process. Its methods are safe for concurrent use.
type Proc struct {
	cfg  Config
	argv []string
	env  []string

	mu      sync.Mutex // serialises Kill, Restart and Stop
	run     int
	cur     *runState
	stopped bool

	ring ring
}

// runState is one run: err is set before done closes.
type runState struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the run was reaped
	err  error
}

// ErrStopped is returned by Restart after Stop.
var ErrStopped = errors.New("procs: the process was stopped")

// Start starts the process described by cfg. It does not wait for
// readiness: use WaitListening or WaitReady.
func Start(ctx context.Context, cfg Config) (*Proc, error) {
	argv, err := cfg.argv()
	if err != nil {
		return nil, err
	}
	if cfg.Lines <= 0 {
		cfg.Lines = 2000
	}
	p := &Proc{cfg: cfg, argv: argv, env: cfg.environ(), ring: ring{max: cfg.Lines}}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.start(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

func (c Config) sub(s string) string {
	if c.Port == 0 {
		return s
	}
	return strings.ReplaceAll(s, "{port}", strconv.Itoa(c.Port))
}

func (c Config) argv() ([]string, error) {
	var argv []string
	switch {
	case len(c.Args) > 0:
		argv = append(argv, c.Args...)
	case c.Shell:
		argv = []string{"sh", "-c", c.Command}
	default:
		var err error
		if argv, err = Split(c.Command); err != nil {
			return nil, err
		}
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("procs: %s: empty command", c.Name)
	}
	for i := range argv {
		argv[i] = c.sub(argv[i])
	}
	return argv, nil
}

func (c Config) environ() []string {
	env := os.Environ()
	for k, v := range c.Env {
		env = append(env, k+"="+c.sub(v))
	}
	return env
}

// Argv is the argv the process runs with ({port} substituted).
func (p *Proc) Argv() []string { return append([]string(nil), p.argv...) }

// start runs one more run of the process; p.mu is held.
func (p *Proc) start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Env, cmd.Dir = p.env, p.cfg.Dir
	cmd.SysProcAttr = childAttr()
	// Pipes of our own, not StdoutPipe: Wait must not wait for a grandchild
	// that holds the write end, and the readers must not race Wait.
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		_ = outR.Close()
		_ = outW.Close()
		return err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	run := p.run + 1
	rs := &runState{cmd: cmd, done: make(chan struct{})}
	done := rs.done
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
		untrack := leftovers.Track(fmt.Sprintf("%s process %d (%s)", p.cfg.Name, pid, p.argv[0]), func() error {
			p.endRun(pid)
			select {
			case <-done:
			case <-time.After(5 * time.Second):
			}
			return nil
		})
		var copies sync.WaitGroup
		copies.Add(2)
		go func() { defer copies.Done(); p.ring.read(outR, run, "stdout"); _ = outR.Close() }()
		go func() { defer copies.Done(); p.ring.read(errR, run, "stderr"); _ = errR.Close() }()
		go func() {
			err := cmd.Wait()
			// Whatever the child left in its group goes with it, so the
			// pipes reach EOF.
			killGroup(pid)
			copiesDone := make(chan struct{})
			go func() { copies.Wait(); close(copiesDone) }()
			select {
			case <-copiesDone:
			case <-time.After(2 * time.Second):
				// A process outside the group holds the pipe: stop reading.
				_ = outR.Close()
				_ = errR.Close()
			}
			rs.err = err
			untrack()
			close(done)
		}()
		return nil
	})
	if err != nil {
		if errors.Is(err, leftovers.ErrClosing) {
			// create never ran: the pipes are still ours to close.
			for _, f := range []*os.File{outR, outW, errR, errW} {
				_ = f.Close()
			}
		}
		return fmt.Errorf("starting %s (%s): %w", p.cfg.Name, p.argv[0], err)
	}
	p.run, p.cur = run, rs
	return nil
}

// killGroup sends SIGKILL to the process group pid leads, and to pid.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// Pid is the pid of the current run (0 before the first start).
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur.cmd.Process.Pid
}

// Run is the number of the current run: 1, then one more per Restart.
func (p *Proc) Run() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.run
}

// Exited is closed when the current run has ended and been reaped.
func (p *Proc) Exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur.done
}

// ExitErr is how the current run ended (nil: exit 0, or still running).
func (p *Proc) ExitErr() error {
	p.mu.Lock()
	rs := p.cur
	p.mu.Unlock()
	select {
	case <-rs.done:
		return rs.err
	default:
		return nil
	}
}

// Running reports whether the current run has not ended.
func (p *Proc) Running() bool {
	select {
	case <-p.Exited():
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL to the process and its group and waits until it is
// reaped. Killing a process that already ended is not an error.
func (p *Proc) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.kill()
}

// KillRun is Kill for run number run only: it reports false, and does
// nothing, when that run is no longer the current one (it ended and was
// restarted meanwhile), so a late kill never hits the next run.
func (p *Proc) KillRun(run int) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.run != run {
		return false, nil
	}
	return true, p.kill()
}

// endRun ends the run pid: the configured Kill, then SIGKILL of its group.
func (p *Proc) endRun(pid int) {
	if p.cfg.Kill != nil {
		p.cfg.Kill(pid)
	}
	killGroup(pid)
}

func (p *Proc) kill() error {
	pid := p.cur.cmd.Process.Pid
	select {
	case <-p.cur.done: // already ended: nothing of it to kill
	default:
		p.endRun(pid)
	}
	select {
	case <-p.cur.done:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("procs: %s (pid %d) was sent SIGKILL and not reaped within 30s", p.cfg.Name, pid)
	}
}

// Restart kills the current run if it still runs (SIGKILL) and starts the
// same command with the same environment, directory and port.
func (p *Proc) Restart(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return ErrStopped
	}
	if err := p.kill(); err != nil {
		return err
	}
	return p.start(ctx)
}

// Terminate ends the current run gracefully: SIGTERM to its group, SIGKILL
// after grace, and waits until it is reaped. Unlike Stop, the process can be
// started again with Restart (a server restarted the way an operator would).
func (p *Proc) Terminate(grace time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.cur.done:
		return nil
	default:
	}
	_ = syscall.Kill(-p.cur.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.cur.done:
		return nil
	case <-time.After(grace):
	}
	return p.kill()
}

// Stop ends the process for good: SIGTERM to its group, SIGKILL after
// grace (0: at once), and waits until it is reaped.
func (p *Proc) Stop(grace time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	if grace > 0 {
		_ = syscall.Kill(-p.cur.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.cur.done:
			return nil
		case <-time.After(grace):
		}
	}
	return p.kill()
}

// WaitListening waits until a TCP connection to addr succeeds. It fails at
// once if the process exits first (with the end of its output), and when
// ctx ends.
func (p *Proc) WaitListening(ctx context.Context, addr string) error {
	return p.WaitReady(ctx, func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	})
}

// WaitReady polls ready (every 20 ms, each call bounded by a second) until
// it returns nil. It fails at once if the process exits first, and when ctx
// ends, with the last error of ready.
func (p *Proc) WaitReady(ctx context.Context, ready func(ctx context.Context) error) error {
	exited := p.Exited()
	var last error
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		last = ready(cctx)
		cancel()
		if last == nil {
			return nil
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-exited:
			t.Stop()
			return fmt.Errorf("%s exited before it was ready (%v); its last output: %s", p.cfg.Name, p.ExitErr(), p.Tail(600))
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s was not ready: %v (last check: %v)", p.cfg.Name, ctx.Err(), last)
		case <-t.C:
		}
	}
}

// Lines returns the lines the ring holds, oldest first, every run included.
func (p *Proc) Lines() []Line { return p.ring.lines() }

// LinesBetween returns the lines written in [from, to].
func (p *Proc) LinesBetween(from, to time.Time) []Line {
	var out []Line
	for _, l := range p.ring.lines() {
		if !l.At.Before(from) && !l.At.After(to) {
			out = append(out, l)
		}
	}
	return out
}

// Tail renders the last lines of output, at most max bytes of them.
func (p *Proc) Tail(max int) string { return Render(p.ring.lines(), max) }

// Render renders lines, keeping the last ones within max bytes.
func Render(lines []Line, max int) string {
	var out []string
	size := 0
	for i := len(lines) - 1; i >= 0; i-- {
		s := lines[i].String()
		if size+len(s)+1 > max && len(out) > 0 {
			break
		}
		out = append(out, s)
		size += len(s) + 1
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return strings.Join(out, "\n")
}

// ring keeps the last max lines.
type ring struct {
	mu   sync.Mutex
	max  int
	buf  []Line
	next int
	full bool
}

func (r *ring) read(rd io.Reader, run int, stream string) {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		r.add(Line{At: time.Now(), Run: run, Stream: stream, Text: sc.Text()})
	}
	// A line longer than the scanner's limit ends the scan: drain the rest
	// so the child never blocks on a full pipe.
	_, _ = io.Copy(io.Discard, rd)
}

func (r *ring) add(l Line) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) < r.max {
		r.buf = append(r.buf, l)
		return
	}
	r.buf[r.next] = l
	r.next = (r.next + 1) % r.max
	r.full = true
}

func (r *ring) lines() []Line {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]Line(nil), r.buf...)
	}
	return append(append([]Line(nil), r.buf[r.next:]...), r.buf[:r.next]...)
}
