package nats

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/onceproof/tck/internal/leftovers"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// Version is the nats-server version embedded in the kit.
const Version = server.VERSION

// Sync is a server's JetStream file-sync setting (nats-server's
// jetstream.sync_interval; "always" sets SyncAlways).
type Sync struct {
	Interval time.Duration `json:"interval"`
	Always   bool          `json:"always"`
}

// String is the setting as the server config spells it.
func (s Sync) String() string {
	if s.Always {
		return "sync_interval: always"
	}
	return fmt.Sprintf("sync_interval: %s", s.Interval)
}

// CanLoseAcked reports whether an acknowledged write may be lost on power
// loss: unless every write is fsynced before the ack, the last interval's
// writes live only in the OS page cache.
func (s Sync) CanLoseAcked() bool { return !s.Always }

// Embedded is a nats-server running in this process with JetStream on and
// file storage in its own temporary directory, listening on loopback.
type Embedded struct {
	mu   sync.Mutex
	opts *server.Options
	srv  *server.Server
	dir  string
	url  string

	rmDir   func() error
	untrack func()
}

// EmbeddedOptions tune StartEmbedded.
type EmbeddedOptions struct {
	// Sync overrides the server's file-sync setting (zero: the server's
	// default, fsync every two minutes).
	Sync Sync
}

// StartEmbedded starts a server on a random loopback port.
func StartEmbedded(ctx context.Context) (*Embedded, error) {
	return StartEmbeddedWith(ctx, EmbeddedOptions{})
}

// StartEmbeddedWith starts a server with o.
func StartEmbeddedWith(ctx context.Context, o EmbeddedOptions) (*Embedded, error) {
	dir, rmDir, err := tempDir("onceproof-nats-")
	if err != nil {
		return nil, err
	}
	opts := &server.Options{
		ServerName: "onceproof-embedded",
		Host:       "127.0.0.1",
		Port:       -1,
		JetStream:  true,
		StoreDir:   dir,
		NoLog:      true,
		NoSigs:     true,
		SyncAlways: o.Sync.Always,
	}
	if o.Sync.Interval > 0 {
		opts.SyncInterval = o.Sync.Interval
	}
	e := &Embedded{opts: opts, dir: dir, rmDir: rmDir}
	if err := e.start(ctx); err != nil {
		_ = rmDir()
		return nil, err
	}
	// Tracked after its directory: an interrupt's clean-up removes the most
	// recent first, so the server stops before its store is removed (it
	// would otherwise still be writing into it).
	e.untrack = leftovers.Track("embedded nats-server "+e.url, e.shutdown)
	// Restarts must come back on the same port so clients reconnect.
	if a, ok := e.srv.Addr().(*net.TCPAddr); ok {
		e.opts.Port = a.Port
	}
	return e, nil
}

// start starts the server and waits until it is ready (see waitReady): its
// listeners are up, a client connected and JetStream answered.
func (e *Embedded) start(ctx context.Context) error {
	srv, err := server.NewServer(e.opts)
	if err != nil {
		return fmt.Errorf("embedded nats-server: %w", err)
	}
	go srv.Start()
	wait := readyWait()
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		wait = time.Until(dl)
	}
	if !srv.ReadyForConnections(wait) {
		srv.Shutdown()
		return fmt.Errorf("embedded nats-server: no client listener within %s", wait)
	}
	if err := waitReady(ctx, "embedded nats-server", srv.ClientURL(), nil); err != nil {
		srv.Shutdown()
		return err
	}
	e.srv = srv
	e.url = srv.ClientURL()
	return nil
}

// URL is the client URL (nats://127.0.0.1:PORT); it stays the same across
// restarts.
func (e *Embedded) URL() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.url
}

// Dir is the JetStream store directory.
func (e *Embedded) Dir() string { return e.dir }

// Sync is the file-sync setting the running server uses, read from the
// server itself.
func (e *Embedded) Sync() Sync {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv == nil {
		return Sync{Interval: e.opts.SyncInterval, Always: e.opts.SyncAlways}
	}
	if cfg := e.srv.JetStreamConfig(); cfg != nil {
		return Sync{Interval: cfg.SyncInterval, Always: cfg.SyncAlways}
	}
	return Sync{Interval: e.opts.SyncInterval, Always: e.opts.SyncAlways}
}

// Restart shuts the server down gracefully (it flushes its stores) and
// starts it again on the same port and store directory.
func (e *Embedded) Restart(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv == nil {
		return fmt.Errorf("embedded nats-server: stopped")
	}
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
	return e.start(ctx)
}

// shutdown stops the server; the lock is not held while it drains, so a
// concurrent URL or Sync call does not wait on it.
func (e *Embedded) shutdown() error {
	e.mu.Lock()
	srv := e.srv
	e.srv = nil
	e.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
	return nil
}

// Stop shuts the server down and removes its store directory.
func (e *Embedded) Stop() error {
	_ = e.shutdown()
	e.untrack()
	return e.rmDir()
}
