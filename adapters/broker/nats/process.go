package nats

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/internal/procs"
)

// BinaryEnv names a nats-server binary to use for child processes instead of
// building one.
const BinaryEnv = "TCK_NATS_SERVER"

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// Binary returns a nats-server executable of the embedded version: the one
// $TCK_NATS_SERVER names, else one built once with `go install` into the
// user cache directory (a few seconds the first time; the sources are
// already in the module cache because the kit embeds the server).
func Binary(ctx context.Context) (string, error) {
	binOnce.Do(func() { binPath, binErr = findBinary(ctx) })
	return binPath, binErr
}

func findBinary(ctx context.Context) (string, error) {
	if p := os.Getenv(BinaryEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", BinaryEnv, p, err)
		}
		return p, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "onceproof", "nats-server-"+Version)
	bin := filepath.Join(dir, "nats-server")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("no %s and no go toolchain to build nats-server: %w", BinaryEnv, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := procs.Grouped(exec.CommandContext(bctx, goBin, "install", "github.com/nats-io/nats-server/v2@v"+strings.TrimPrefix(Version, "v")))
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-mod=mod")
	cmd.Dir = os.TempDir() // outside any module: install the released version
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building nats-server %s: %v: %s", Version, err, strings.TrimSpace(string(out)))
	}
	return bin, nil
}

// Process is a nats-server child process with JetStream on file storage in
// its own temporary directory, on loopback. Unlike Embedded it can be killed
// (SIGKILL) without taking the kit down: the abrupt restart of BR-3.1.
//
// Its directory and each process it starts are registered with
// internal/leftovers before they exist, and on Linux the child gets SIGKILL
// when the kit dies (Pdeathsig), so neither outlives the kit.
type Process struct {
	mu    sync.Mutex // serialises Restart and Stop
	bin   string
	dir   string
	conf  string
	port  int
	mport int
	cmd   *exec.Cmd
	done  chan struct{}

	rmDir func() error // removes dir and untracks it
}

// StartProcess starts bin with the given sync setting (zero: the default).
func StartProcess(ctx context.Context, bin string, sync Sync) (*Process, error) {
	dir, rmDir, err := tempDir("onceproof-nats-proc-")
	if err != nil {
		return nil, err
	}
	p := &Process{bin: bin, dir: dir, rmDir: rmDir}
	if p.port, err = procs.FreePort(); err == nil {
		p.mport, err = procs.FreePort()
	}
	if err != nil {
		_ = rmDir()
		return nil, err
	}
	js := fmt.Sprintf("store_dir: %q", filepath.Join(dir, "js"))
	switch {
	case sync.Always:
		js += "\n  sync_interval: always"
	case sync.Interval > 0:
		js += fmt.Sprintf("\n  sync_interval: %q", sync.Interval.String())
	}
	conf := fmt.Sprintf("listen: \"127.0.0.1:%d\"\nhttp: \"127.0.0.1:%d\"\nserver_name: onceproof-child\njetstream {\n  %s\n}\n", p.port, p.mport, js)
	p.conf = filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(p.conf, []byte(conf), 0o600); err != nil {
		_ = rmDir()
		return nil, err
	}
	if err := p.start(ctx); err != nil {
		_ = rmDir()
		return nil, err
	}
	return p, nil
}

// tempDir creates a temporary directory registered with leftovers; remove
// deletes it and untracks it.
func tempDir(pattern string) (dir string, remove func() error, err error) {
	return leftovers.TempDir(pattern)
}

// start starts the child and waits until it is ready (see waitReady): a
// client connected and JetStream answered.
func (p *Process) start(ctx context.Context) error {
	cmd := exec.Command(p.bin, "-c", p.conf)
	cmd.Stdout, cmd.Stderr = nil, nil
	cmd.SysProcAttr = childAttr()
	done := make(chan struct{})
	err := leftovers.Create(func() error {
		if err := cmd.Start(); err != nil {
			return err
		}
		untrack := leftovers.Track(fmt.Sprintf("nats-server child process %d", cmd.Process.Pid), func() error {
			_ = cmd.Process.Kill()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
			}
			return nil
		})
		go func() { _ = cmd.Wait(); untrack(); close(done) }()
		return nil
	})
	if err != nil {
		return fmt.Errorf("starting nats-server %s: %w", p.bin, err)
	}
	p.cmd, p.done = cmd, done
	if err := waitReady(ctx, "nats-server child process", p.URL(), done); err != nil {
		_ = cmd.Process.Kill()
		<-done
		p.cmd = nil
		return err
	}
	return nil
}

// URL is the client URL; it stays the same across restarts.
func (p *Process) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", p.port) }

// Restart stops the server, gracefully (SIGTERM: it flushes and exits) or
// abruptly (SIGKILL: no chance to flush anything), and starts it again on
// the same port and store.
func (p *Process) Restart(ctx context.Context, abrupt bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stop(abrupt)
	return p.start(ctx)
}

func (p *Process) stop(abrupt bool) {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	sig := syscall.SIGTERM
	if abrupt {
		sig = syscall.SIGKILL
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	p.cmd = nil
}

// Stop kills the server and removes its directory.
func (p *Process) Stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stop(false)
	return p.rmDir()
}

// Sync reads the running server's sync setting from its monitoring
// endpoint (/varz).
func (p *Process) Sync(ctx context.Context) (Sync, error) {
	v, err := p.varz(ctx)
	if err != nil {
		return Sync{}, err
	}
	return Sync{Interval: time.Duration(v.JetStream.Config.SyncInterval), Always: v.JetStream.Config.SyncAlways}, nil
}

type varz struct {
	Version   string `json:"version"`
	JetStream struct {
		Config struct {
			SyncInterval int64 `json:"sync_interval"`
			SyncAlways   bool  `json:"sync_always"`
		} `json:"config"`
	} `json:"jetstream"`
}

func (p *Process) varz(ctx context.Context) (varz, error) {
	var v varz
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/varz", p.mport), nil)
	if err != nil {
		return v, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return v, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return v, fmt.Errorf("varz: %s", resp.Status)
	}
	return v, json.NewDecoder(resp.Body).Decode(&v)
}
