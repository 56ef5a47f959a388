package containers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/moby/moby/client"

	"github.com/onceproof/tck/internal/leftovers"
)

// Removed counts what a cleanup removed.
type Removed struct {
	Containers, Networks, Volumes int
}

func (r Removed) String() string {
	return fmt.Sprintf("%d containers, %d networks, %d volumes", r.Containers, r.Networks, r.Volumes)
}

// Cleanup removes every container, network and volume of the kit on this
// Docker host, whoever created them (a CI post-step, `docker ps` hygiene).
// Running kit sessions lose their containers: call it between runs.
func Cleanup(ctx context.Context) (Removed, error) {
	return removeBy(ctx, LabelKit+"=1", nil)
}

// CleanupSession removes what this process created.
func CleanupSession(ctx context.Context) (Removed, error) {
	return removeBy(ctx, LabelSession+"="+SessionID(), nil)
}

// CleanupStale removes the kit's resources whose owning process is no longer
// running on this host (a run killed with SIGKILL, a crashed CI job). Other
// live sessions are left alone, so parallel test packages do not collide.
func CleanupStale(ctx context.Context) (Removed, error) {
	return removeBy(ctx, LabelKit+"=1", func(labels map[string]string) bool {
		pid, err := strconv.Atoi(labels[LabelPID])
		if err != nil || pid <= 0 {
			return false
		}
		return !alive(pid)
	})
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// removeBy removes containers first (a network in use cannot go), then
// networks and volumes carrying label, keeping those keep rejects.
func removeBy(ctx context.Context, label string, pick func(map[string]string) bool) (Removed, error) {
	var out Removed
	dc, err := Client(ctx)
	if err != nil {
		return out, err
	}
	f := client.Filters{}.Add("label", label)
	var errs []error
	cs, err := dc.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return out, err
	}
	for _, c := range cs.Items {
		if pick != nil && !pick(c.Labels) {
			continue
		}
		if _, err := dc.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			errs = append(errs, err)
			continue
		}
		out.Containers++
	}
	ns, err := dc.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		errs = append(errs, err)
	} else {
		for _, n := range ns.Items {
			if pick != nil && !pick(n.Labels) {
				continue
			}
			if _, err := dc.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil {
				errs = append(errs, err)
				continue
			}
			out.Networks++
		}
	}
	vs, err := dc.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		errs = append(errs, err)
	} else {
		for _, v := range vs.Items {
			if pick != nil && !pick(v.Labels) {
				continue
			}
			if _, err := dc.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true}); err != nil {
				errs = append(errs, err)
				continue
			}
			out.Volumes++
		}
	}
	return out, errors.Join(errs...)
}

var sessionOnce2 sync.Once

// trackSession registers, once the process creates its first Docker
// resource, the removal of everything of this session (by label) with the
// process-wide leftovers registry: the CLI's RemoveAll at exit and the
// signal watcher (first SIGINT or SIGTERM) then remove what a rule left,
// including what was half-created when the signal came. It is registered
// first, so it runs after the removals of single containers.
func trackSession() {
	sessionOnce2.Do(func() {
		sessionUsed.Store(true)
		leftovers.Track("the kit's Docker containers, networks and volumes (session "+SessionID()+")", func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err := CleanupSession(ctx)
			return err
		})
	})
}

// sessionUsed is set once this process has talked to Docker.
var sessionUsed atomic.Bool

// FinalSweep removes, at the very end of the process, whatever this session
// still has on the Docker host. It catches a container whose creation was
// already on its way to the engine when an interrupt removed everything
// tracked: the engine finishes creating it after that removal, and no
// tracked entry is left to remove it. A process that never used Docker
// makes no Docker call here.
func FinalSweep() error {
	if !sessionUsed.Load() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := CleanupSession(ctx)
	return err
}
