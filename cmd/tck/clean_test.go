package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/internal/reports"
)

// TestCleanRemovesStaleTempAndLocks: what a SIGKILLed run left (a temporary
// folder, the lock of its report folder) goes; a live run's lock stays
// (issue 21, input 10). Docker is pointed nowhere: clean then exits 4 after
// the local part.
func TestCleanRemovesStaleTempAndLocks(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(tmp, "no-docker.sock"))
	t.Chdir(t.TempDir())
	stale := filepath.Join(tmp, "onceproof-nats-123")
	os.MkdirAll(stale, 0o755)
	os.WriteFile(filepath.Join(stale, leftovers.TempMarker), nil, 0o644)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(stale, leftovers.TempMarker), old, old)
	os.Chtimes(stale, old, old)
	// A user's folders that merely share the kit's prefixes, and the data
	// directory scripts/postgres-local.sh leaves once its server is
	// stopped: no marker, so never removed (issue 35).
	var theirs []string
	for _, name := range []string{"tck-mine", "onceproof-x", "tck-postgres"} {
		d := filepath.Join(tmp, name)
		os.MkdirAll(filepath.Join(d, "data"), 0o700)
		os.WriteFile(filepath.Join(d, "data", "PG_VERSION"), []byte("17\n"), 0o600)
		for _, p := range []string{filepath.Join(d, "data", "PG_VERSION"), filepath.Join(d, "data"), d} {
			os.Chtimes(p, old, old)
		}
		theirs = append(theirs, d)
	}
	dead := filepath.Join("tck-results", "dead")
	os.MkdirAll(dead, 0o755)
	os.WriteFile(filepath.Join(dead, lockFile), []byte("999999999\n"), 0o644)
	_, unlock, err := claimOutDir(filepath.Join("tck-results", "live"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	code, stdout, _ := tck(t, "clean")
	if code != reports.ExitUnavailable {
		t.Errorf("exit %d, want 4 (no docker)", code)
	}
	if _, err := os.Stat(stale); err == nil || !strings.Contains(stdout, stale) {
		t.Errorf("stale temporary folder kept: %q", stdout)
	}
	for _, d := range theirs {
		if _, err := os.Stat(filepath.Join(d, "data", "PG_VERSION")); err != nil || strings.Contains(stdout, d) {
			t.Errorf("clean touched %s, a folder without the kit's marker: %v, %q", d, err, stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(dead, lockFile)); err == nil {
		t.Errorf("a dead run's lock kept: %q", stdout)
	}
	if _, err := os.Stat(filepath.Join("tck-results", "live", lockFile)); err != nil {
		t.Errorf("a live run's lock removed: %v", err)
	}
}

// TestCleanSkipsPlantedLock: a FIFO (or a link to one) in place of a
// report folder's lock neither hangs clean (a plain open of a FIFO blocks
// until a writer comes) nor is removed: it is not the kit's (issue 35).
func TestCleanSkipsPlantedLock(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(tmp, "no-docker.sock"))
	t.Chdir(t.TempDir())
	dir := filepath.Join("tck-results", "planted")
	os.MkdirAll(dir, 0o755)
	fifo := filepath.Join(dir, lockFile)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var code int
	var stdout string
	go func() {
		code, stdout, _ = tck(t, "clean")
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("tck clean hangs on a FIFO in place of a lock")
	}
	if code != reports.ExitUnavailable {
		t.Errorf("exit %d, want 4 (no docker)", code)
	}
	if _, err := os.Lstat(fifo); err != nil || strings.Contains(stdout, "planted") {
		t.Errorf("the planted FIFO was removed: %v, %q", err, stdout)
	}
}
