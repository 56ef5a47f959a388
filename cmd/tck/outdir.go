package main

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"time"

	"github.com/onceproof/tck/internal/reports"
)

const (
	// lockFile is held (flock) by the run writing a report folder.
	lockFile = reports.LockFile
	// markerFile marks a folder as the kit's own: only such a folder is
	// ever cleared, so a user's own files are never deleted.
	markerFile = reports.MarkerFile
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
	// Refused before the lock, which would put a file into a user's folder.
	if err := reports.CheckOwned(dir); err != nil {
		return "", nil, usagef("--out: %v", err)
	}
	unlock, err := reports.LockFolder(dir, 0)
	if err != nil {
		return "", nil, usagef("%v", err)
	}
	if err := reports.ClaimFolder(dir); err != nil {
		unlock()
		return "", nil, usagef("%v", err)
	}
	return dir, unlock, nil
}

// lockHeld says whether a live run holds the lock file lock (tck clean).
func lockHeld(lock string) bool { return reports.LockHeld(lock) }
