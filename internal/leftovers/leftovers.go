// Package leftovers is the process-wide registry of what the kit creates
// outside its own memory (containers, networks, volumes, child processes,
// temporary directories), so that nothing is left behind on any exit path:
// a normal end, an error, SIGINT or SIGTERM, a panic in a rule.
//
// The rule for a creator: Track (or Create) before the thing exists, with a
// remove that works whether it was created or not; call the returned untrack
// once the creator removed it itself. The CLI calls RemoveAll when it exits
// (whatever the exit path, after writing its report).
//
// Signals are the CLI's alone: importing this package (through a suite, in
// an author's test binary) installs no handler; there the rule that created
// a thing removes it through its own cleanup (t.Cleanup, DeferCleanup).
// The CLI calls HandleSignals, and from then on a signal watcher, armed while
// anything is tracked, calls RemoveAll on the first SIGINT or SIGTERM, then
// lets the program finish on its own (the CLI writes its report and exits
// 2); a second signal exits at once with code 2.
//
// Once RemoveAll has begun, the registry is closing: Create refuses new
// work with ErrClosing, so a rule still running cannot create what nothing
// would remove; what Track registers later is removed by the next RemoveAll.
package leftovers

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
)

// ErrClosing is returned by Create once RemoveAll has begun (an interrupt,
// or the end of the process).
var ErrClosing = errors.New("the kit is shutting down (interrupted): nothing new is created")

// Registry is a set of things to remove. The package functions use one
// process-wide Registry; tests make their own.
type Registry struct {
	// gate orders creation against removal: a Create holds it shared, so
	// RemoveAll (exclusive) sees every creation either finished (and
	// removes it) or not yet begun (and refused).
	gate sync.RWMutex

	mu      sync.Mutex
	next    int
	items   map[int]item
	closing bool

	// watch, when set (HandleSignals), is armed while anything is tracked
	// (see watcher).
	watch *watcher
}

type item struct {
	what   string
	remove func() error
}

// Track registers remove under what (a short description for messages,
// e.g. "container onceproof-nats-1234"). untrack drops the entry without
// calling remove; it is safe to call more than once.
func (r *Registry) Track(what string, remove func() error) (untrack func()) {
	r.mu.Lock()
	if r.items == nil {
		r.items = map[int]item{}
	}
	r.next++
	id := r.next
	r.items[id] = item{what: what, remove: remove}
	if r.watch != nil {
		r.watch.arm(r)
	}
	r.mu.Unlock()
	return func() { r.drop(id) }
}

// drop forgets entry id; with nothing left tracked, the watcher disarms.
func (r *Registry) drop(id int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.items, id)
	if len(r.items) == 0 && r.watch != nil {
		r.watch.disarm()
	}
}

// Create runs create, which should create one thing and Track it, so that
// it cannot interleave with RemoveAll. It returns ErrClosing without calling
// create once RemoveAll has begun. Keep create short (a directory, a process
// start): RemoveAll waits for it.
func (r *Registry) Create(create func() error) error {
	r.gate.RLock()
	defer r.gate.RUnlock()
	if r.Closing() {
		return ErrClosing
	}
	return create()
}

// Closing reports whether RemoveAll has begun: a slow creator (a container)
// checks it after creating and removes what it made.
func (r *Registry) Closing() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closing
}

// RemoveAll removes everything tracked, the most recent first (a process
// before its directory), and returns the errors joined, each naming what it
// could not remove. An entry whose remove failed stays tracked, so a later
// RemoveAll tries again. Safe to call concurrently and repeatedly.
func (r *Registry) RemoveAll() error {
	r.gate.Lock()
	defer r.gate.Unlock()
	r.mu.Lock()
	r.closing = true
	ids := make([]int, 0, len(r.items))
	for id := range r.items {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	slices.Sort(ids)
	var errs []error
	for _, id := range slices.Backward(ids) {
		r.mu.Lock()
		it, ok := r.items[id]
		r.mu.Unlock()
		if !ok {
			continue // untracked meanwhile by its owner
		}
		if err := it.remove(); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", it.what, err))
			continue
		}
		r.drop(id)
	}
	return errors.Join(errs...)
}

// Pending lists what is tracked now, oldest first.
func (r *Registry) Pending() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]int, 0, len(r.items))
	for id := range r.items {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, r.items[id].what)
	}
	return out
}

var std Registry

// HandleSignals makes the process-wide registry remove what it holds on
// SIGINT or SIGTERM (see the package comment). Only a program that owns its
// process calls it (the CLI, in main); a library, a suite or a test binary
// never does.
func HandleSignals() {
	std.mu.Lock()
	defer std.mu.Unlock()
	if std.watch != nil {
		return
	}
	std.watch = &watcher{}
	if len(std.items) > 0 {
		std.watch.arm(&std)
	}
}

// Track registers remove with the process-wide registry; after
// HandleSignals, the signal watcher is armed while anything is tracked.
func Track(what string, remove func() error) (untrack func()) {
	return std.Track(what, remove)
}

// Create is Registry.Create on the process-wide registry.
func Create(create func() error) error { return std.Create(create) }

// Closing is Registry.Closing on the process-wide registry.
func Closing() bool { return std.Closing() }

// RemoveAll removes everything the process-wide registry holds. The CLI
// calls it once the run ended, on every exit path (defer it in main and call
// it again before os.Exit, which skips defers).
func RemoveAll() error { return std.RemoveAll() }

// Pending is Registry.Pending on the process-wide registry.
func Pending() []string { return std.Pending() }

// TempMarker is the file the kit writes into every temporary directory it
// creates (MkdirTemp): `tck clean` removes a stale directory only when it
// holds this file, never by its name alone (a user's tck-mine, or the data
// directory scripts/postgres-local.sh leaves, is not the kit's).
const TempMarker = ".onceproof-temp"

// markerText says what the marker is, for whoever finds it.
const markerText = "This folder is a temporary folder of the onceproof kit (tck); `tck clean` removes it once no process uses it.\n"

// MkdirTemp is os.MkdirTemp("", pattern) carrying TempMarker: every
// temporary directory of the kit's is made by it, so that `tck clean` can
// tell it from a folder that only shares its prefix.
func MkdirTemp(pattern string) (string, error) {
	d, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(d, TempMarker), []byte(markerText), 0o644); err != nil {
		_ = os.RemoveAll(d)
		return "", err
	}
	return d, nil
}

// IsKitTemp says whether dir carries TempMarker (a regular file, not a
// link planted to look like one).
func IsKitTemp(dir string) bool {
	fi, err := os.Lstat(filepath.Join(dir, TempMarker))
	return err == nil && fi.Mode().IsRegular()
}

// TempDir creates a temporary directory (MkdirTemp(pattern), so it carries
// TempMarker) registered with the process-wide registry; remove deletes it
// and untracks it.
func TempDir(pattern string) (dir string, remove func() error, err error) {
	err = Create(func() error {
		d, err := MkdirTemp(pattern)
		if err != nil {
			return err
		}
		untrack := Track("directory "+d, func() error { return os.RemoveAll(d) })
		dir = d
		remove = func() error {
			err := os.RemoveAll(d)
			if err == nil {
				untrack()
			}
			return err
		}
		return nil
	})
	if err != nil {
		return "", nil, fmt.Errorf("creating a temporary directory: %w", err)
	}
	return dir, remove, nil
}

// Exit code of the hard exit on a second signal: the documented exit code of
// an interrupted run.
const interruptedExit = 2

// watcher handles SIGINT and SIGTERM while something is tracked. On the
// first signal it removes everything tracked, which also unblocks a rule
// waiting on a server that is now gone, and returns: the program (the
// runner, the CLI) finishes on its own and writes its report. On a second
// signal it removes again and exits with code 2 at once. With nothing
// tracked and no signal seen it is disarmed, so a program that created
// nothing (or removed it all) keeps Go's default signal handling and no
// goroutine of the kit's.
type watcher struct {
	ch       chan os.Signal
	stop     chan struct{}
	signaled bool // a signal came: stay armed until the process ends
	// reported is closed once the first signal's removal was reported
	// (tests wait on it; the message must not be lost to an early exit).
	reported chan struct{}
}

// arm and disarm run under the registry's lock.
func (w *watcher) arm(r *Registry) {
	if w.ch != nil {
		return
	}
	w.ch, w.stop = make(chan os.Signal, 2), make(chan struct{})
	if w.reported == nil {
		w.reported = make(chan struct{})
	}
	signal.Notify(w.ch, os.Interrupt, syscall.SIGTERM)
	go w.run(r, w.ch, w.stop, w.reported)
}

func (w *watcher) disarm() {
	if w.ch == nil || w.signaled {
		return
	}
	signal.Stop(w.ch)
	close(w.stop)
	w.ch, w.stop = nil, nil
}

func (w *watcher) run(r *Registry, ch chan os.Signal, stop, reported chan struct{}) {
	var sig os.Signal
	select {
	case sig = <-ch:
	case <-stop:
		return
	}
	r.mu.Lock()
	w.signaled = true
	r.mu.Unlock()
	report(sig, r.RemoveAll())
	close(reported)
	sig = <-ch
	report(sig, r.RemoveAll())
	os.Exit(interruptedExit)
}

func report(sig os.Signal, err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "onceproof: %v: removing what the kit created: %v\n", sig, err)
		return
	}
	fmt.Fprintf(os.Stderr, "onceproof: %v: removed what the kit created\n", sig)
}
