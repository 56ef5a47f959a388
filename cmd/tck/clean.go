package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/internal/target"
)

// tempPrefixes name the temporary folders the kit creates
// (leftovers.MkdirTemp); clean removes only those that also carry the
// kit's marker file (leftovers.TempMarker), never by the name alone.
var tempPrefixes = []string{"onceproof-", "tck-"}

// staleAge is how long a temporary folder no process holds must have been
// left unchanged before clean removes it.
const staleAge = 10 * time.Minute

// cmdClean removes what runs killed with SIGKILL left behind (they cannot
// clean up after themselves): temporary folders the kit marked as its own
// that no process holds (a user's tck-mine, or the data directory
// scripts/postgres-local.sh leaves, carries no marker and stays), locks of
// report folders under ./tck-results that no run holds, and containers,
// networks and volumes on this Docker host. By default only those whose
// owning process is gone; --all removes every container, running sessions
// included.
func cmdClean(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("clean")
	all := fs.Bool("all", false, "also remove the containers of kit runs still in progress")
	if err := parse(fs, args, stdout); err != nil {
		return err
	}
	for _, d := range leftovers.StaleTempDirs(os.TempDir(), tempPrefixes, staleAge) {
		if err := os.RemoveAll(d); err == nil {
			fmt.Fprintf(stdout, "removed stale temporary folder %s\n", d)
		}
	}
	locks, _ := filepath.Glob(filepath.Join("tck-results", "*", lockFile))
	for _, l := range locks {
		if !lockHeld(l) && os.Remove(l) == nil {
			fmt.Fprintf(stdout, "removed stale lock %s\n", l)
		}
	}
	if err := containers.Available(ctx); err != nil {
		return fmt.Errorf("%w: docker: %v", target.ErrUnavailable, err)
	}
	clean := containers.CleanupStale
	if *all {
		clean = containers.Cleanup
	}
	removed, err := clean(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "removed %s\n", removed)
	return nil
}
