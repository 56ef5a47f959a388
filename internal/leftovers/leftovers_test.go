package leftovers

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/gomega"
)

func TestRemoveAllNewestFirstAndRetries(t *testing.T) {
	var r Registry
	var order []string
	fail := true
	r.Track("dir", func() error { order = append(order, "dir"); return nil })
	r.Track("proc", func() error {
		order = append(order, "proc")
		if fail {
			return errors.New("busy")
		}
		return nil
	})
	gone := r.Track("untracked", func() error { order = append(order, "untracked"); return nil })
	gone()
	err := r.RemoveAll()
	if err == nil || !strings.Contains(err.Error(), "removing proc: busy") {
		t.Fatalf("want the failed removal named, got %v", err)
	}
	if !slices.Equal(order, []string{"proc", "dir"}) {
		t.Fatalf("order %v, want newest first and nothing untracked", order)
	}
	if p := r.Pending(); !slices.Equal(p, []string{"proc"}) {
		t.Fatalf("pending %v: a failed removal stays tracked", p)
	}
	fail = false
	if err := r.RemoveAll(); err != nil || len(r.Pending()) != 0 {
		t.Fatalf("second RemoveAll: %v, pending %v", err, r.Pending())
	}
}

func TestCreateRefusedOnceClosing(t *testing.T) {
	var r Registry
	if err := r.Create(func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	_ = r.RemoveAll()
	called := false
	if err := r.Create(func() error { called = true; return nil }); !errors.Is(err, ErrClosing) || called {
		t.Fatalf("Create after RemoveAll: %v (called %v)", err, called)
	}
}

// TestCreateAndRemoveAllDoNotInterleave: everything created concurrently
// with a RemoveAll is either removed by it or refused.
func TestCreateAndRemoveAllDoNotInterleave(t *testing.T) {
	var r Registry
	dir := t.TempDir()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			err := r.Create(func() error {
				p := filepath.Join(dir, fmt.Sprint(i))
				if err := os.Mkdir(p, 0o755); err != nil {
					return err
				}
				r.Track(p, func() error { return os.RemoveAll(p) })
				return nil
			})
			if err != nil {
				return
			}
		}
	}()
	time.Sleep(20 * time.Millisecond)
	if err := r.RemoveAll(); err != nil {
		t.Fatal(err)
	}
	<-done
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Fatalf("%d directories left", len(es))
	}
}

// TestSignal runs this test binary as a child that tracks a directory and
// waits: the first SIGINT removes the directory and lets the child finish on
// its own (it exits 0 after noticing); a second signal exits 2 at once.
func TestSignal(t *testing.T) {
	if os.Getenv("LEFTOVERS_CHILD") != "" {
		child()
		return
	}
	for _, second := range []bool{false, true} {
		t.Run(fmt.Sprintf("second=%v", second), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "tracked")
			cmd := exec.Command(os.Args[0], "-test.run", "^TestSignal$")
			cmd.Env = append(os.Environ(), "LEFTOVERS_CHILD="+dir)
			if second {
				cmd.Env = append(cmd.Env, "LEFTOVERS_STAY=1")
			}
			out := &strings.Builder{}
			cmd.Stderr, cmd.Stdout = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Once the directory is tracked (it exists a moment before, and
			// a signal then would find the watcher not yet armed).
			waitFor(t, func() bool { _, err := os.Stat(dir + ".tracked"); return err == nil })
			_ = cmd.Process.Signal(syscall.SIGINT)
			waitFor(t, func() bool { _, err := os.Stat(dir); return os.IsNotExist(err) })
			if second {
				_ = cmd.Process.Signal(syscall.SIGTERM)
			}
			err := cmd.Wait()
			code := cmd.ProcessState.ExitCode()
			want := 0
			if second {
				want = 2
			}
			if code != want {
				t.Fatalf("exit code %d (%v), want %d; output:\n%s", code, err, want, out)
			}
			if !strings.Contains(out.String(), "removed what the kit created") {
				t.Errorf("no removal message in:\n%s", out)
			}
		})
	}
}

func child() {
	dir := os.Getenv("LEFTOVERS_CHILD")
	HandleSignals()
	err := Create(func() error {
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		Track("directory "+dir, func() error { return os.RemoveAll(dir) })
		return nil
	})
	if err != nil {
		os.Exit(5)
	}
	if err := os.WriteFile(dir+".tracked", nil, 0o600); err != nil {
		os.Exit(6)
	}
	// The program goes on after the first signal (the CLI would write its
	// report); it notices the removal and ends normally, unless told to stay.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(dir); os.IsNotExist(err) && os.Getenv("LEFTOVERS_STAY") == "" {
			// The watcher reports right after the removal; a program that
			// ends at once must not lose that line (the CLI writes its
			// report first, which takes longer).
			std.mu.Lock()
			reported := std.watch.reported
			std.mu.Unlock()
			select {
			case <-reported:
			case <-time.After(10 * time.Second):
			}
			os.Exit(0)
		}
	}
	os.Exit(7)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	gomega.NewWithT(t).Eventually(cond).WithTimeout(10 * time.Second).WithPolling(10 * time.Millisecond).Should(gomega.BeTrue())
}
