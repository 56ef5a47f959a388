// Package testbin builds a command once per test binary, for the tests
// that run it as a user does (signals, child processes, a browser on its
// report): linking it costs seconds, more on a loaded host.
package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Binary is one command built at most once: a package-level value of a
// test package, removed by Remove in its TestMain.
type Binary struct {
	// Pkg is the package to build ("." with Dir, or an import path).
	Pkg string
	// Dir is where go build runs ("": the working directory when it runs).
	Dir string

	once      sync.Once
	dir, path string
	out       []byte
	err       error
}

// Path builds the command on its first call (go build, no ldflags) and
// returns its path; a failed build fails t with go build's output.
func (b *Binary) Path(t testing.TB) string {
	t.Helper()
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "onceproof-testbin-")
		if b.err != nil {
			return
		}
		name := filepath.Base(b.Pkg) // the command's own name, as go build names it
		if b.Pkg == "." {
			name = filepath.Base(b.Dir)
		}
		b.path = filepath.Join(b.dir, name)
		build := exec.Command("go", "build", "-o", b.path, b.Pkg)
		build.Dir = b.Dir
		b.out, b.err = build.CombinedOutput()
	})
	if b.err != nil {
		t.Fatalf("building %s: %v\n%s", b.Pkg, b.err, b.out)
	}
	return b.path
}

// Remove removes what Path built.
func (b *Binary) Remove() {
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}
