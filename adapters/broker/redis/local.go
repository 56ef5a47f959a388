package redis

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"time"

	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/internal/options"
	"github.com/onceproof/tck/internal/procs"
)

// ServerBinary is the redis-server the kit starts itself when no server is
// named (Debian's redis-server package installs it on PATH).
const ServerBinary = "redis-server"

// ErrNoServerBinary is returned by RunLocal when redis-server is not on
// PATH.
var ErrNoServerBinary = errors.New(ServerBinary + " is not on PATH")

// HaveServerBinary reports whether RunLocal can start a server here.
func HaveServerBinary() bool {
	_, err := exec.LookPath(ServerBinary)
	return err == nil
}

// local is one redis-server child process of the kit: loopback only, its own
// temporary directory, the append-only file fsynced on every write (so an
// acknowledged XADD survives a SIGKILL), no RDB snapshots.
type local struct {
	proc   *procs.Proc
	url    string
	rmDir  func() error
	stopMu sync.Once
	err    error
}

func startLocal(ctx context.Context) (*local, error) {
	bin, err := exec.LookPath(ServerBinary)
	if err != nil {
		return nil, fmt.Errorf("%w: install it (Debian: apt-get install redis-server), or name a server with broker/redis=redis://host:port", ErrNoServerBinary)
	}
	dir, rmDir, err := leftovers.TempDir("tck-redis-*")
	if err != nil {
		return nil, err
	}
	// A free port can be taken by someone else before the server binds it;
	// a few attempts make that a non-event.
	var last error
	for range 3 {
		port, err := procs.FreePort()
		if err != nil {
			last = err
			continue
		}
		p, err := procs.Start(ctx, procs.Config{
			Name: "redis-server", Port: port, Lines: 200,
			Args: []string{bin, "--port", "{port}", "--bind", "127.0.0.1", "--dir", dir,
				"--save", "", "--appendonly", "yes", "--appendfsync", "always", "--daemonize", "no"},
		})
		if err != nil {
			last = err
			break
		}
		l := &local{proc: p, url: fmt.Sprintf("redis://127.0.0.1:%d/0", port), rmDir: rmDir}
		wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err = p.WaitReady(wctx, l.ready)
		cancel()
		if err == nil {
			return l, nil
		}
		last = err
		_ = p.Stop(0)
	}
	return nil, errors.Join(fmt.Errorf("starting %s: %w", ServerBinary, last), rmDir())
}

func (l *local) ready(ctx context.Context) error {
	rdb, err := dial(ctx, l.url, nil)
	if err != nil {
		return err
	}
	return rdb.Close()
}

// restart stops the server (SIGTERM: it writes its append-only file and
// exits) or kills it (SIGKILL), starts it again on the same directory and
// port, and waits until it answers.
func (l *local) restart(ctx context.Context, abrupt bool) error {
	if !abrupt {
		if err := l.proc.Terminate(10 * time.Second); err != nil {
			return err
		}
	}
	if err := l.proc.Restart(ctx); err != nil {
		return err
	}
	return l.proc.WaitReady(ctx, l.ready)
}

// stop ends the server and removes its directory, once.
func (l *local) stop() error {
	l.stopMu.Do(func() { l.err = errors.Join(l.proc.Stop(2*time.Second), l.rmDir()) })
	return l.err
}

// RunLocal starts a redis-server of the kit's own from PATH (nothing to
// configure: what `tck selftest` and a bare broker/redis use when
// TCK_REDIS_URL is unset). Rules that restart a server (BR-3.1) get one of
// their own, restarted for real. Stop ends every server it started.
func RunLocal(ctx context.Context, opts ...Option) (*Target, error) {
	client := options.Apply(opts).client
	l, err := startLocal(ctx)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	owned := []*local{l}
	stopAll := func() error {
		mu.Lock()
		defer mu.Unlock()
		var errs []error
		for _, o := range owned {
			errs = append(errs, o.stop())
		}
		owned = nil
		return errors.Join(errs...)
	}
	t, err := newTarget(ctx, l.url, client, stopAll)
	if err != nil {
		return nil, errors.Join(err, stopAll())
	}
	delete(t.Lacks, "broker-restart")
	t.Private = func(ctx context.Context) (*OwnServer, error) {
		o, err := startLocal(ctx)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		owned = append(owned, o)
		mu.Unlock()
		return &OwnServer{url: o.url, client: t.Client, restart: o.restart, stop: o.stop}, nil
	}
	t.Address = fmt.Sprintf("local %s (a child process of the kit, pid %d) at %s", ServerBinary, l.proc.Pid(), l.url)
	t.Config["restartable"] = "true"
	t.Version += " (local child process)"
	t.Notes = append(t.Notes, "a "+ServerBinary+" the kit started from PATH on a loopback port, in a temporary directory removed when the run ends (TCK_REDIS_URL was unset)")
	return t, nil
}
