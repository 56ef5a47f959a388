package main

import (
	"os"
	"testing"

	"github.com/onceproof/tck/internal/testbin"
)

// The tests that drive the CLI as a process (signals, child processes)
// share one binary (testbin).
var tckBin testbin.Binary

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
	tckBin = testbin.Binary{Pkg: ".", Dir: pkgDir}
	code := m.Run()
	tckBin.Remove()
	os.Exit(code)
}

// tckBinary is the CLI, built once per test binary.
func tckBinary(t *testing.T) string { return tckBin.Path(t) }
