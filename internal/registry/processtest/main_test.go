package processtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/poll"
)

// TestMain runs the package from the repository's root (the services'
// paths are relative to it) with a TMPDIR of its own, so that its tests,
// each mostly waiting on a service and the rules' quiet periods, can run
// side by side (t.Parallel) without changing either; once they are done,
// nothing of any run (a build, a data directory) may be left there.
func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	root, err := filepath.Abs("../../..")
	if err == nil {
		err = os.Chdir(root)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "processtest:", err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "processtest-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, "processtest:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	os.Setenv("TMPDIR", tmp)
	code := m.Run()
	// A rule's clean-up may still be removing its folder (a replica's last
	// write landing): a while for it, then whatever is there was left.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	_ = poll.Until(ctx, 100*time.Millisecond, 100*time.Millisecond, func() error {
		if left, _ := os.ReadDir(tmp); len(left) > 0 {
			return errors.New("not empty")
		}
		return nil
	})
	cancel()
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		fmt.Fprintf(os.Stderr, "processtest: left in TMPDIR by the services' runs: %v\n", names)
		code = 1
	}
	return code
}
