package containers

import (
	"context"
	"os"
	"testing"

	"github.com/moby/moby/client"
)

// RequireEnv is the variable that turns a missing Docker (or image) from a
// skip into a failure. CI sets it, so a green CI means the containers ran.
const RequireEnv = "TCK_REQUIRE_DOCKER"

// Need skips t, naming the reason, when Docker or one of the images is not
// available; with TCK_REQUIRE_DOCKER=1 it fails t instead.
func Need(t testing.TB, images ...string) {
	t.Helper()
	ctx := context.Background()
	reason := ""
	if err := Available(ctx); err != nil {
		reason = err.Error()
	} else {
		dc, err := Client(ctx)
		for _, img := range images {
			if err != nil {
				reason = err.Error()
				break
			}
			if _, err := dc.ImageInspect(ctx, img); err != nil {
				reason = "image " + img + " is not present locally; build it with `make images` (scripts/build-images.sh)"
				break
			}
		}
	}
	if reason == "" {
		return
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s=1 and the containers cannot run: %s", RequireEnv, reason)
	}
	t.Skip("needs Docker: " + reason)
}

// AssertSessionEmpty fails t for every container or network this process
// still has on the Docker host.
func AssertSessionEmpty(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	dc, err := Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := client.Filters{}.Add("label", LabelSession+"="+SessionID())
	cs, err := dc.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs.Items {
		t.Errorf("left behind: container %s (%s)", c.Names, c.Image)
	}
	ns, err := dc.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns.Items {
		t.Errorf("left behind: network %s", n.Name)
	}
}
