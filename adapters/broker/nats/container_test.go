package nats

import (
	"context"
	"testing"

	"github.com/moby/moby/client"

	"github.com/onceproof/tck/internal/containers"
)

func TestContainerStartsAndLeavesNothing(t *testing.T) {
	containers.Need(t, Image())
	ctx := context.Background()
	n, err := StartContainer(ctx, WithSyncAlways())
	if err != nil {
		t.Fatal(err)
	}
	if n.Version == "" {
		t.Errorf("no server version read from INFO")
	}
	s, err := n.SyncSetting(ctx)
	if err != nil || !s.Always {
		t.Errorf("sync_interval always not in effect: %+v err=%v", s, err)
	}
	dc, err := containers.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	in, err := dc.ContainerInspect(ctx, n.c.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if in.Container.Config.Labels[containers.LabelKit] != "1" {
		t.Errorf("container not labelled: %v", in.Container.Config.Labels)
	}
	if err := n.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	f := client.Filters{}.Add("label", containers.LabelSession+"="+containers.SessionID())
	cs, err := dc.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Items) != 0 {
		t.Fatalf("%d containers of the session left after Remove", len(cs.Items))
	}
}
