// Package nemesis injects faults into the kit's broker and store containers
// (a "nemesis" in Jepsen's sense): stop and start, kill and start, pause and
// resume, cut and restore the network, and tracks which node leads a
// replicated resource while it does. It holds no workload: a fault run drives
// a suite's real rule, whose Target.Disrupt hook calls Apply, and every fault
// and heal is a note on that rule's timeline (its Log).
//
// A fault is two steps, Inject and Heal; Heal returns once the server answers
// again (the container's own readiness probe), so a workload resumes on a
// server that is back, and the time it took is on the timeline.
package nemesis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/onceproof/tck/internal/containers"
)

// Log is where a fault notes what it did: a rule's timeline. The suites'
// Disrupt logs have this method.
type Log interface {
	Note(actor, action, key, result string)
}

// Kind names a fault.
type Kind string

const (
	// Restart stops the server gracefully (SIGTERM, it flushes) and starts it.
	Restart Kind = "stop-start"
	// Kill kills the server (SIGKILL, no flush) and starts it.
	Kill Kind = "kill-start"
	// Pause freezes every process of the container (cgroup freezer): the
	// server stops answering but keeps its connections, like a long GC pause
	// or a hung host; Heal resumes it.
	Pause Kind = "pause-resume"
	// Partition disconnects the container from its network: nothing reaches
	// it, not even its published ports; Heal reconnects it.
	Partition Kind = "partition"
)

// Kinds lists every fault, in the order a report shows them.
var Kinds = []Kind{Restart, Kill, Pause, Partition}

// Ready probes a server from the host; Heal waits for it.
type Ready func(ctx context.Context) error

// Target is a container the nemesis may hurt.
type Target struct {
	Name      string // for the timeline, e.g. "nats" or "n2"
	Container *containers.Container
	Ready     Ready
}

// Nemesis injects faults and notes them on a Log.
type Nemesis struct {
	log Log
	// HealTimeout bounds the wait for the server after a heal (default 60s).
	HealTimeout time.Duration
}

// New returns a nemesis noting on log (which may be nil).
func New(log Log) *Nemesis { return &Nemesis{log: log, HealTimeout: 60 * time.Second} }

func (n *Nemesis) note(action, value, result string) {
	if n.log != nil {
		n.log.Note("nemesis", action, value, result)
	}
}

// Inject breaks t with fault k.
func (n *Nemesis) Inject(ctx context.Context, k Kind, t Target) error {
	dc, err := containers.Client(ctx)
	if err != nil {
		return err
	}
	id := t.Container.ID
	switch k {
	case Restart:
		timeout := 10
		_, err = dc.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &timeout})
	case Kill:
		_, err = dc.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "SIGKILL"})
		if err == nil {
			err = waitExited(ctx, dc, id)
		}
	case Pause:
		_, err = dc.ContainerPause(ctx, id, client.ContainerPauseOptions{})
	case Partition:
		_, err = dc.NetworkDisconnect(ctx, networkOf(t.Container), client.NetworkDisconnectOptions{Container: id, Force: true})
	default:
		err = fmt.Errorf("unknown fault %q", k)
	}
	if err != nil {
		n.note("inject", string(k)+" "+t.Name, "error: "+err.Error())
		return fmt.Errorf("nemesis %s %s: %w", k, t.Name, err)
	}
	n.note("inject", string(k)+" "+t.Name, "done")
	return nil
}

// Heal undoes fault k on t and waits until the server answers again.
func (n *Nemesis) Heal(ctx context.Context, k Kind, t Target) error {
	dc, err := containers.Client(ctx)
	if err != nil {
		return err
	}
	id := t.Container.ID
	start := time.Now()
	switch k {
	case Restart, Kill:
		_, err = dc.ContainerStart(ctx, id, client.ContainerStartOptions{})
	case Pause:
		_, err = dc.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
	case Partition:
		var ep *network.EndpointSettings
		if len(t.Container.Spec.Aliases) > 0 {
			ep = &network.EndpointSettings{Aliases: t.Container.Spec.Aliases}
		}
		_, err = dc.NetworkConnect(ctx, networkOf(t.Container), client.NetworkConnectOptions{Container: id, EndpointConfig: ep})
	default:
		err = fmt.Errorf("unknown fault %q", k)
	}
	if err == nil && t.Ready != nil {
		rctx, cancel := context.WithTimeout(ctx, n.HealTimeout)
		err = containers.Retry(rctx, func() error { return t.Ready(rctx) })
		cancel()
	}
	if err != nil {
		n.note("heal", string(k)+" "+t.Name, "error: "+err.Error())
		return fmt.Errorf("nemesis heal %s %s: %w", k, t.Name, err)
	}
	n.note("heal", string(k)+" "+t.Name, fmt.Sprintf("server answers again after %v", time.Since(start).Round(time.Millisecond)))
	return nil
}

// Apply injects k, holds it for hold (the window in which the workload runs
// against the broken server), then heals.
func (n *Nemesis) Apply(ctx context.Context, k Kind, t Target, hold time.Duration) error {
	if err := n.Inject(ctx, k, t); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-time.After(hold):
	}
	return n.Heal(context.WithoutCancel(ctx), k, t)
}

// networkOf is the network a container was attached to: its private
// network, or Docker's default bridge.
func networkOf(c *containers.Container) string {
	if c.Spec.Network != nil {
		return c.Spec.Network.Name
	}
	return "bridge"
}

func waitExited(ctx context.Context, dc *client.Client, id string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return containers.Retry(ctx, func() error {
		in, err := dc.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if err != nil {
			return err
		}
		if in.Container.State != nil && in.Container.State.Running {
			return errors.New("still running")
		}
		return nil
	})
}
