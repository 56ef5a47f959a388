package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The tests that drive the CLI as a process (signals, child processes)
// share one binary: linking it costs seconds, more on a loaded host, and
// each of them used to build its own.
var tckBin struct {
	once      sync.Once
	dir, path string
	out       []byte
	err       error
}

// parallelTests: the tests marked t.Parallel() with a pointer here mostly
// wait (on a server of their own: its start, the rules' reads of its
// settings; on child processes of the CLI) and share nothing: no
// environment variable, working directory, port or server of another test;
// their verdicts do not rest on timing. Being parallel, they run after
// every sequential test of the package, so they never overlap the tests
// that set the environment or the working directory (t.Setenv, t.Chdir),
// measure time or memory (TestHostileProfiles, TestInterruptIsPrompt,
// TestPausedRunIsUnknown), or run timed rules and want them conformant.
//
// pkgDir is this package's directory, read before any test changes the
// working directory.
var pkgDir string

func TestMain(m *testing.M) {
	pkgDir, _ = os.Getwd()
	code := m.Run()
	if tckBin.dir != "" {
		_ = os.RemoveAll(tckBin.dir)
	}
	os.Exit(code)
}

// tckBinary builds the CLI once per test binary (go build, no ldflags) and
// returns its path.
func tckBinary(t *testing.T) string {
	t.Helper()
	tckBin.once.Do(func() {
		tckBin.dir, tckBin.err = os.MkdirTemp("", "onceproof-cli-test-")
		if tckBin.err != nil {
			return
		}
		tckBin.path = filepath.Join(tckBin.dir, "tck")
		build := exec.Command("go", "build", "-o", tckBin.path, ".")
		build.Dir = pkgDir
		tckBin.out, tckBin.err = build.CombinedOutput()
	})
	if tckBin.err != nil {
		t.Fatalf("building tck: %v\n%s", tckBin.err, tckBin.out)
	}
	return tckBin.path
}
