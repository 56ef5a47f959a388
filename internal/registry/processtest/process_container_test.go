package processtest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner/runnertest"
	"github.com/onceproof/tck/internal/verdict"
)

// The Go reference as a container (consumer/process=container:IMAGE): the
// crash rules pass with real kills of its containers, and no container of
// the run is left afterwards.
func TestServiceContainer(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: builds an image and runs containers")
	}
	if err := containers.Available(context.Background()); err != nil {
		if os.Getenv("TCK_REQUIRE_DOCKER") == "1" {
			t.Fatalf("Docker is not available and TCK_REQUIRE_DOCKER=1: %v", err)
		}
		t.Skipf("Docker is not available: %v", err)
	}
	t.Parallel() // TestMain: the repository's root
	const image = "onceproof/consumer-service-go:test"
	if out, err := exec.Command("examples/consumer-service/go/build-image.sh", image).CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", image, err, out)
	}
	got, sum := runnertest.Table(runService(t, "process", "container:"+image, "CO-1.1", "CO-2.1", "CO-2.2", "CO-2.3"))
	t.Log(sum)
	for _, id := range []string{"CO-1.1", "CO-2.1", "CO-2.2", "CO-2.3"} {
		if got[id] != verdict.Pass {
			t.Errorf("%s is %s, want pass", id, got[id])
		}
	}
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label="+containers.LabelRole+"="+registry.ServiceRole,
		"--filter", "label="+containers.LabelSession+"="+containers.SessionID()).Output()
	if err != nil {
		t.Fatal(err)
	}
	if ids := strings.Fields(string(out)); len(ids) > 0 {
		t.Errorf("service containers left: %v", ids)
	}
}
