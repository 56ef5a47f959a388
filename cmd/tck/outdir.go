package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/onceproof/tck/internal/reports"
)

// lockFile marks a report folder a run is writing to.
const lockFile = ".tck.lock"

// claimOutDir creates or takes over the run's report folder and locks it.
// With no --out the folder is new and unique to this run (a timestamp with
// microseconds plus a random suffix: two runs started in the same second
// never share one). A reused --out is locked against a concurrent run and
// cleared of the files a previous run wrote, so no stale history survives;
// files the kit did not write are left alone.
func claimOutDir(out string, started time.Time) (string, func(), error) {
	dir := out
	if dir == "" {
		var b [3]byte
		_, _ = rand.Read(b[:])
		dir = filepath.Join("tck-results", started.Format("20060102-150405.000000")+"-"+hex.EncodeToString(b[:]))
	}
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return "", nil, usagef("--out %s exists and is not a folder", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, usagef("cannot create the report folder: %v", err)
	}
	lock := filepath.Join(dir, lockFile)
	for attempt := 0; ; attempt++ {
		f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%d\n", os.Getpid())
			f.Close()
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", nil, usagef("cannot write into the report folder: %v", err)
		}
		if pid := lockOwner(lock); pid > 0 && alive(pid) || attempt > 0 {
			return "", nil, usagef("the report folder %s is in use by another run (pid %d; remove %s if that run is gone)", dir, lockOwner(lock), lock)
		}
		os.Remove(lock) // left by a run that no longer exists
	}
	unlock := func() { os.Remove(lock) }
	if err := clearPrevious(dir); err != nil {
		unlock()
		return "", nil, usagef("cannot clear the previous run's files from %s: %v", dir, err)
	}
	return dir, unlock, nil
}

// clearPrevious removes what an earlier run wrote into dir.
func clearPrevious(dir string) error {
	for _, name := range []string{reports.FileJSON, reports.FileMarkdown, reports.FileHTML, reports.FileJUnit, "ginkgo.log", reports.DirHistories} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	tmps, _ := filepath.Glob(filepath.Join(dir, ".tmp-*"))
	for _, t := range tmps {
		os.Remove(t)
	}
	return nil
}

func lockOwner(lock string) int {
	data, err := os.ReadFile(lock)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid
}

func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return p.Signal(syscall.Signal(0)) == nil
}
