package reports

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/strictyaml"
	"github.com/onceproof/tck/internal/verdict"
)

// The report folder's own files, the same as the CLI's --out: a folder is
// cleared only when it is empty or carries the marker, and a writer holds
// the lock while it writes.
const (
	LockFile   = ".tck.lock"
	MarkerFile = ".tck-report"
)

// folders are the report folders this process added results to, by
// absolute path: the first Add of a process claims its folder (clears what
// an earlier run wrote there), later ones merge into the same report.
var (
	foldersMu sync.Mutex
	folders   = map[string]*Report{}
)

// Add merges results of target into the report folder dir and writes the
// whole bundle again (results.json, report.md, report.html, junit.xml,
// histories), atomically (WriteAll) and under the folder's lock, so every
// Check and Register of one test binary ends in one report. A result
// replaces an earlier one of the same target and rule. The first Add of the
// process refuses a folder holding files the kit did not write and clears
// the previous run's files from one it did. run and kit describe the
// process; the first Add's are kept.
func Add(dir string, kit Kit, run Run, t Target, results []verdict.Result) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	foldersMu.Lock()
	defer foldersMu.Unlock()
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return fmt.Errorf("cannot create the report folder: %v", err)
	}
	unlock, err := LockFolder(abs, 30*time.Second)
	if err != nil {
		return err
	}
	defer unlock()
	rep := folders[abs]
	if rep == nil {
		if err := ClaimFolder(abs); err != nil {
			return err
		}
		rep = &Report{Kit: kit, Run: run}
		folders[abs] = rep
	}
	merge(rep, t, results)
	rep.Run.Finished = time.Now()
	rep.Run.DurationMs = rep.Run.Finished.Sub(rep.Run.Started).Milliseconds()
	rep.Finish()
	return WriteAll(abs, rep)
}

// merge puts t and its results into rep, replacing what rep held of them.
func merge(rep *Report, t Target, results []verdict.Result) {
	found := false
	for i := range rep.Targets {
		if rep.Targets[i].Name == t.Name {
			rep.Targets[i], found = t, true
		}
	}
	if !found {
		rep.Targets = append(rep.Targets, t)
	}
	key := func(r verdict.Result) string { return r.Target + "\x00" + r.Rule }
	at := map[string]int{}
	for i, r := range rep.Results {
		at[key(r)] = i
	}
	for _, r := range results {
		if i, ok := at[key(r)]; ok {
			rep.Results[i] = r
			continue
		}
		at[key(r)] = len(rep.Results)
		rep.Results = append(rep.Results, r)
	}
	suites := map[string]bool{}
	for _, r := range rep.Results {
		suites[r.Suite] = true
	}
	rep.Run.Suites = rep.Run.Suites[:0]
	for _, s := range catalog.Suites() {
		if suites[s] {
			rep.Run.Suites = append(rep.Run.Suites, s)
		}
	}
}

// CheckOwned refuses a folder that holds anything but the kit's marker and
// lock: the kit clears only what it marked as its own. It writes nothing, so
// a user's folder is refused before the kit puts a file in it.
func CheckOwned(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("cannot read the report folder: %v", err)
	}
	for _, e := range entries {
		if e.Name() == MarkerFile {
			return nil
		}
	}
	for _, e := range entries {
		if e.Name() != LockFile {
			return fmt.Errorf("the report folder %s holds files the kit did not write (%s; no %s marker): name a new or empty folder", dir, e.Name(), MarkerFile)
		}
	}
	return nil
}

// ClaimFolder takes dir over for this process: it must be empty or marked
// as the kit's; the marker is written and the previous run's files removed.
// The caller holds the folder's lock.
func ClaimFolder(dir string) error {
	if err := CheckOwned(dir); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, MarkerFile), []byte("a report folder of the onceproof kit: a run that writes here clears it first\n"), 0o644); err != nil {
		return fmt.Errorf("cannot write into the report folder: %v", err)
	}
	for _, name := range []string{FileJSON, FileMarkdown, FileHTML, FileJUnit, "run.log", "ginkgo.log", DirHistories} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("cannot clear the previous run's files from %s: %v", dir, err)
		}
	}
	RemoveTemps(dir)
	return nil
}

// ErrInUse is the error of LockFolder when another live process holds the lock.
var ErrInUse = errors.New("in use by another run")

// LockFolder takes dir's lock: an exclusive flock on LockFile, held until
// unlock or the process ends (a killed run leaves no lock that counts: the
// kernel drops it), waiting up to wait for another process that holds it.
// The pid is written once the lock is held, for the message a second run
// prints.
func LockFolder(dir string, wait time.Duration) (func(), error) {
	lock := filepath.Join(dir, LockFile)
	deadline := time.Now().Add(wait)
	for {
		f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("cannot write into the report folder: %v", err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			if !time.Now().Before(deadline) {
				waited := ""
				if wait > 0 {
					waited = fmt.Sprintf(", waited %s", wait)
				}
				return nil, fmt.Errorf("the report folder %s is %w%s%s", dir, ErrInUse, ownerText(lock), waited)
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("cannot lock the report folder: %v", err)
		}
		// The holder before us may have removed the file between our open
		// and our lock: then the lock is on a name that is gone; retry.
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

// ownerText names the pid a lock file holds, for the in-use message.
func ownerText(lock string) string {
	data, err := strictyaml.ReadFile(lock, "lock file", 64) // a pid: a planted FIFO or device is not read
	if err != nil {
		return ""
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 0 {
		return fmt.Sprintf(" (pid %d)", pid)
	}
	return ""
}

// LockHeld says whether a live process holds the lock file lock (tck clean
// removes only the others).
// Anything but a regular file there (a FIFO, whose plain open would block
// clean for ever) counts as held: it is not the kit's to remove.
func LockHeld(lock string) bool {
	if fi, err := os.Lstat(lock); err != nil || !fi.Mode().IsRegular() {
		return err == nil
	}
	f, err := os.OpenFile(lock, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
