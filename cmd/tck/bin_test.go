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
