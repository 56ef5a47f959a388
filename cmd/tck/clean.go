package main

import (
	"context"
	"fmt"
	"io"

	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/target"
)

// cmdClean removes containers, networks and volumes the kit left on this
// Docker host (a run killed with SIGKILL cannot clean up after itself).
// By default only those whose owning process is gone; --all removes every
// one, running sessions included.
func cmdClean(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("clean")
	all := fs.Bool("all", false, "also remove the resources of kit runs still in progress")
	if err := parse(fs, args, stdout); err != nil {
		return err
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
