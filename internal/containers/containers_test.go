package containers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

func TestNoDockerFailsFast(t *testing.T) {
	start := time.Now()
	_, err := dial(context.Background(), client.WithHost("unix:///nonexistent/docker.sock"))
	if !errors.Is(err, ErrNoDocker) {
		t.Fatalf("want ErrNoDocker, got %v", err)
	}
	// Not a timing assertion on the thing under test: a guard that the ping
	// is bounded at all (it is capped at 5 s).
	if time.Since(start) > 10*time.Second {
		t.Fatalf("dial did not fail fast: %v", time.Since(start))
	}
}

// count returns how many containers and networks of this session exist.
func count(t *testing.T, ctx context.Context) int {
	dc, err := Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := client.Filters{}.Add("label", LabelSession+"="+SessionID())
	cs, err := dc.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := dc.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	return len(cs.Items) + len(ns.Items)
}

func TestPostgresStarts(t *testing.T) {
	Need(t, PostgresImage())
	ctx := context.Background()
	p, err := StartPostgres(ctx, PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Remove(ctx)
	if err := PostgresPing(ctx, p.Endpoint("5432/tcp")); err != nil {
		t.Fatal(err)
	}
}

func TestCleanupSessionRemovesByLabel(t *testing.T) {
	Need(t, PostgresImage())
	ctx := context.Background()
	nw, err := NewNetwork(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	// Any container on the network will do; nothing waits for it to serve.
	if _, err := Start(ctx, Spec{Role: "test", Image: PostgresImage(), Env: map[string]string{"POSTGRES_PASSWORD": "x"}, Network: nw, Aliases: []string{"solo"}}); err != nil {
		t.Fatal(err)
	}
	if c := count(t, ctx); c < 2 {
		t.Fatalf("want a container and a network, found %d", c)
	}
	r, err := CleanupSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Containers < 1 || r.Networks < 1 {
		t.Errorf("cleanup removed %s", r)
	}
	if c := count(t, ctx); c != 0 {
		t.Fatalf("%d resources left after CleanupSession", c)
	}
}
