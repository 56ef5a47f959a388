package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/reports"
)

// TestOneLockManyStarts: many runs started at once on one --out, again and
// again: never two holders at a time (issue 21, input 8: 1 in 35 trials).
func TestOneLockManyStarts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	for trial := 0; trial < 40; trial++ {
		var holders, won atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, unlock, err := claimOutDir(dir, time.Now())
				if err != nil {
					if !strings.Contains(err.Error(), "in use by another run") {
						t.Errorf("trial %d: %v", trial, err)
					}
					return
				}
				won.Add(1)
				if n := holders.Add(1); n != 1 {
					t.Errorf("trial %d: %d runs hold the lock at once", trial, n)
				}
				time.Sleep(time.Millisecond)
				holders.Add(-1)
				unlock()
			}()
		}
		close(start)
		wg.Wait()
		if won.Load() == 0 {
			t.Fatalf("trial %d: no start took the free lock", trial)
		}
	}
	// A lock file a killed run left (its pid, no flock held) is no lock.
	os.WriteFile(filepath.Join(dir, lockFile), []byte("999999999\n"), 0o644)
	_, unlock, err := claimOutDir(dir, time.Now())
	if err != nil {
		t.Fatalf("a dead run's lock file: %v", err)
	}
	unlock()
}

// TestFullDiskWritesNothingAndSaysTheRunRan: a report that cannot be
// written (the file size limit stands for a full disk) replaces no file of
// the folder, leaves no temporary file, and exits 5 naming the file, after
// printing the conclusion of what ran (issue 21, input 11).
func TestFullDiskWritesNothingAndSaysTheRunRan(t *testing.T) {
	profile := filepath.Join("..", "..", "examples", "profiles", "seed-07-07.yaml")
	for _, args := range [][]string{
		{"plan", "--profile", profile},
		{"run", "--quiet", "--target", "eventstore/memory", "--rule", "ES-1.1"},
	} {
		t.Run(args[0], func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			if code, _, stderr := tck(t, append(args, "--out", dir)...); code > 2 {
				t.Fatalf("first write: exit %d, %s", code, stderr)
			}
			before := snapshot(t, dir)
			var old syscall.Rlimit
			if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
				t.Skip(err)
			}
			lim := old
			lim.Cur = 2048 // results.json and report.html are larger
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
				t.Skip(err)
			}
			code, stdout, stderr := tck(t, append(args, "--out", dir)...)
			syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old)
			if code != reports.ExitNotWritten || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "could not be written") || !strings.Contains(stderr, dir) {
				t.Errorf("exit %d, stderr %q; want 5 and one line naming the file", code, stderr)
			}
			if args[0] == "run" && !strings.Contains(stdout, "0 fail") {
				t.Errorf("the run's conclusion is not printed: %q", stdout)
			}
			// All or none: none, and no temporary file (the previous run's
			// files were cleared when the run claimed its folder).
			for name := range snapshot(t, dir) {
				if name != runLog && name != markerFile {
					t.Errorf("%s left after a failed write", name)
				}
			}
			if len(before) < 5 {
				t.Errorf("the first write wrote only %d files", len(before))
			}
		})
	}
}

func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			data, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			out[rel] = data
		}
		return nil
	})
	return out
}

// TestOneLockManyProcesses is TestOneLockManyStarts across processes, as
// users start runs: 14 at once, 10 times; the winners' hold intervals
// never overlap.
func TestOneLockManyProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: 140 processes")
	}
	dir := filepath.Join(t.TempDir(), "out")
	for round := 0; round < 10; round++ {
		var cmds []*exec.Cmd
		var outs []*strings.Builder
		for i := 0; i < 14; i++ {
			cmd := exec.Command(os.Args[0], "-test.run=^TestLockChild$")
			cmd.Env = append(os.Environ(), "TCK_LOCK_CHILD="+dir)
			var b strings.Builder
			cmd.Stdout = &b
			cmds, outs = append(cmds, cmd), append(outs, &b)
		}
		for _, c := range cmds {
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
		}
		type span struct{ from, to int64 }
		var held []span
		for i, c := range cmds {
			_ = c.Wait()
			var s span
			if n, _ := fmt.Sscanf(outs[i].String(), "held %d %d", &s.from, &s.to); n == 2 {
				held = append(held, s)
			}
		}
		if len(held) == 0 {
			t.Fatalf("round %d: no process took the free lock", round)
		}
		for i := range held {
			for j := i + 1; j < len(held); j++ {
				if held[i].from < held[j].to && held[j].from < held[i].to {
					t.Errorf("round %d: two processes held the lock at once: %v %v", round, held[i], held[j])
				}
			}
		}
	}
}

// TestLockChild is one process of TestOneLockManyProcesses.
func TestLockChild(t *testing.T) {
	dir := os.Getenv("TCK_LOCK_CHILD")
	if dir == "" {
		t.Skip("a child of TestOneLockManyProcesses")
	}
	_, unlock, err := claimOutDir(dir, time.Now())
	if err != nil {
		return
	}
	from := time.Now().UnixNano()
	time.Sleep(20 * time.Millisecond)
	to := time.Now().UnixNano()
	unlock()
	fmt.Printf("held %d %d\n", from, to)
}

// TestReadOnlyOutIsExit3: a --out that is read-only from the start is
// refused before anything runs: exit 3 (nothing ran), as the README's
// table says; 5 is for a report the run could not write (issue 35).
func TestReadOnlyOutIsExit3(t *testing.T) {
	ro := t.TempDir()
	if err := os.Chmod(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(ro, 0o755)
	if f, err := os.Create(filepath.Join(ro, "probe")); err == nil {
		f.Close()
		t.Skip("this user writes into a read-only folder (root)")
	}
	for _, out := range []string{ro, filepath.Join(ro, "new")} {
		code, stdout, stderr := tck(t, "run", "--quiet", "--target", "eventstore/memory", "--rule", "ES-1.1", "--out", out)
		if code != reports.ExitUsage || strings.Count(stderr, "\n") != 1 || stdout != "" {
			t.Errorf("--out %s: exit %d, stdout %q, stderr %q; want exit 3 and one line", out, code, stdout, stderr)
		}
	}
}
