package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/onceproof/tck/internal/reports"
)

const (
	// lockFile is held (flock) by the run writing a report folder.
	lockFile = ".tck.lock"
	// markerFile marks a folder as the kit's own: only such a folder is
	// ever cleared, so a user's own files are never deleted.
	markerFile = ".tck-report"
)

// claimOutDir creates or takes over the run's report folder and locks it.
// With no --out the folder is new and unique to this run (a timestamp with
// microseconds plus a random suffix: two runs started in the same second
// never share one). A reused --out must be empty or marked as the kit's
// (markerFile); it is locked against a concurrent run and cleared of the
// files a previous run wrote. A folder holding anything else is refused.
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
	if err := checkOwned(dir); err != nil {
		return "", nil, err
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, markerFile), []byte("a report folder of the onceproof kit: tck clears it when it runs with --out here\n"), 0o644); err != nil {
		unlock()
		return "", nil, usagef("cannot write into the report folder: %v", err)
	}
	if err := clearPrevious(dir); err != nil {
		unlock()
		return "", nil, usagef("cannot clear the previous run's files from %s: %v", dir, err)
	}
	return dir, unlock, nil
}

// checkOwned refuses a folder that holds anything but the kit's marker and
// lock: the kit clears only what it marked as its own.
func checkOwned(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return usagef("cannot read the report folder: %v", err)
	}
	for _, e := range entries {
		if e.Name() == markerFile {
			return nil
		}
	}
	for _, e := range entries {
		if e.Name() != lockFile {
			return usagef("--out %s holds files the kit did not write (%s; no %s marker): name a new or empty folder", dir, e.Name(), markerFile)
		}
	}
	return nil
}

// lockDir takes the folder's lock: an exclusive flock on lockFile, held
// until unlock or the process ends (a killed run leaves no lock that
// counts: the kernel drops it). The pid is written once the lock is held,
// for the message a second run prints.
func lockDir(dir string) (unlock func(), err error) {
	lock := filepath.Join(dir, lockFile)
	for {
		f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, usagef("cannot write into the report folder: %v", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, usagef("the report folder %s is in use by another run%s", dir, ownerText(lock))
			}
			return nil, usagef("cannot lock the report folder: %v", err)
		}
		// The holder before us may have removed the file between our open
		// and our lock: then we hold a lock on a name that is gone; retry.
		var held, named syscall.Stat_t
		if syscall.Fstat(int(f.Fd()), &held) != nil || syscall.Stat(lock, &named) != nil || held.Ino != named.Ino || held.Dev != named.Dev {
			f.Close()
			continue
		}
		_ = f.Truncate(0)
		fmt.Fprintf(f, "%d\n", os.Getpid())
		return func() {
			os.Remove(lock) // while still held: nobody locks a name being removed
			f.Close()
		}, nil
	}
}

func ownerText(lock string) string {
	data, err := os.ReadFile(lock)
	if err != nil {
		return ""
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 0 {
		return fmt.Sprintf(" (pid %d)", pid)
	}
	return ""
}

// lockHeld says whether a live run holds dir's lock (tck clean).
func lockHeld(lock string) bool {
	f, err := os.Open(lock)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// clearPrevious removes what an earlier run wrote into dir (a folder the
// kit marked as its own).
func clearPrevious(dir string) error {
	for _, name := range []string{reports.FileJSON, reports.FileMarkdown, reports.FileHTML, reports.FileJUnit, "ginkgo.log", reports.DirHistories} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	reports.RemoveTemps(dir)
	return nil
}
