package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	old := time.Now().Add(-time.Hour)
	os.Chtimes(stale, old, old)
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
	if _, err := os.Stat(filepath.Join(dead, lockFile)); err == nil {
		t.Errorf("a dead run's lock kept: %q", stdout)
	}
	if _, err := os.Stat(filepath.Join("tck-results", "live", lockFile)); err != nil {
		t.Errorf("a live run's lock removed: %v", err)
	}
}
