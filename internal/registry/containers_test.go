package registry

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/adapters/broker/rabbitmq"
	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/runner/runnertest"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// runContainer starts key=container, runs its suite, stops it, and checks
// that nothing of this process is left on the Docker host.
func runContainer(t *testing.T, key, image string) []verdict.Result {
	containers.Need(t, image)
	ctx := context.Background()
	ref, err := target.Parse(key + "=container")
	if err != nil {
		t.Fatal(err)
	}
	kind, ref, err := Targets().Resolve(ref)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	st, err := kind.Start(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s started in %v: %s %s", key, time.Since(start).Round(time.Millisecond), st.Info.Version, st.Info.Address)
	rs := runner.Run(ref.Key(), st.Register, runner.Options{})
	if err := st.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	containers.AssertSessionEmpty(t)
	return rs
}

func TestPostgresContainerPassesEventStoreSuite(t *testing.T) {
	for _, r := range runContainer(t, "eventstore/postgres", containers.PostgresImage()) {
		if r.Verdict == verdict.Fail {
			t.Errorf("%s: %s: %s", r.Rule, r.Verdict, r.Reason)
		}
	}
}

func TestNATSContainerPassesBrokerSuite(t *testing.T) {
	for _, r := range runContainer(t, "broker/nats", nats.Image()) {
		if r.Verdict == verdict.Fail {
			t.Errorf("%s: %s: %s", r.Rule, r.Verdict, r.Reason)
		}
		if r.Rule == "BR-3.1" {
			t.Logf("BR-3.1 %s: %s", r.Verdict, r.Reason)
		}
	}
}

// broker/rabbitmq=container: a node from the locally built image through
// testcontainers-go's RabbitMQ module, consumer_timeout at the ack wait:
// every rule that applies passes, an undecided one run again as tck run
// does (a rule of the ack wait left unknown would say the timeout did not
// take), and nothing is left.
func TestRabbitMQContainerPassesBrokerSuite(t *testing.T) {
	containers.Need(t, rabbitmq.Image())
	ref, err := target.Parse("broker/rabbitmq=container")
	if err != nil {
		t.Fatal(err)
	}
	kind, ref, err := Targets().Resolve(ref)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kind.Start(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	runnertest.Passes(t, ref.Key(), st.Register)
	if err := st.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	containers.AssertSessionEmpty(t)
}

// Without Docker a container target is unavailable (exit 4) with one line
// saying so. The check runs in a child process whose DOCKER_HOST points
// nowhere, because this process keeps its Docker client once connected.
func TestContainerWithoutDocker(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestContainerWithoutDockerChild$", "-test.v")
	cmd.Env = append(os.Environ(), "DOCKER_HOST=unix:///nonexistent/docker.sock", "TCK_NO_DOCKER_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestContainerWithoutDockerChild") {
		t.Fatalf("child did not run the check:\n%s", out)
	}
}

func TestContainerWithoutDockerChild(t *testing.T) {
	if os.Getenv("TCK_NO_DOCKER_CHILD") == "" {
		t.Skip("runs only as the child of TestContainerWithoutDocker")
	}
	for _, key := range []string{"broker/nats=container", "eventstore/postgres=container"} {
		ref, err := target.Parse(key)
		if err != nil {
			t.Fatal(err)
		}
		kind, ref, err := Targets().Resolve(ref)
		if err != nil {
			t.Fatal(err)
		}
		_, err = kind.Start(context.Background(), ref)
		if !errors.Is(err, target.ErrUnavailable) || !strings.Contains(err.Error(), "docker is not available") {
			t.Fatalf("%s: want target unavailable because docker is not, got %v", key, err)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: the error is not one line: %q", key, err)
		}
		t.Logf("%s: %v", key, err)
	}
}
