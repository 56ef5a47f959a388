package kafka_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/broker/kafka"
	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/broker"
)

// startContainer starts broker/kafka=container through the registry, as
// the CLI does.
func startContainer(t *testing.T) (*target.Started, target.Ref, error) {
	t.Helper()
	ref, err := target.Parse("broker/kafka=container")
	if err != nil {
		t.Fatal(err)
	}
	k, ref, err := registry.Targets().Resolve(ref)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st, err := k.Start(ctx, ref)
	return st, ref, err
}

// broker/kafka=container on the kit's kfake stand-in image (`make images`):
// the report names the image and says it is an emulator, the rules that
// apply pass (BR-3.1 on a rule's own container, stopped and killed for
// real), and nothing of this process is left on the Docker host. Skipped
// without Docker or the image, failed instead with TCK_REQUIRE_DOCKER=1.
func TestContainerPassesBrokerSuite(t *testing.T) {
	containers.Need(t, kafka.StandInImage)
	t.Setenv(kafka.ImageEnv, kafka.StandInImage)
	st, ref, err := startContainer(t)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = st.Stop()
		}
	})
	in := st.Info
	t.Logf("%s at %s, %v", in.Version, in.Address, in.Notes)
	if in.Mode != target.Container || !in.Emulator || in.Config["image"] != kafka.StandInImage {
		t.Errorf("want mode container, an emulator, image %s; got mode %s, emulator %v, image %q", kafka.StandInImage, in.Mode, in.Emulator, in.Config["image"])
	}
	// The stand-in reads the environment an apache/kafka image reads: the
	// cluster id metadata reports is the one the kit set.
	if !strings.Contains(in.Config["cluster"], "cluster id b25jZXByb29mLXRjay12MQ") || !strings.HasPrefix(in.Address, "kafka://127.0.0.1:") {
		t.Errorf("want the kit's cluster id from a loopback address, got %q at %s", in.Config["cluster"], in.Address)
	}
	if !strings.Contains(strings.Join(in.Notes, "\n"), "stand-in") {
		t.Errorf("no note says the image is the kit's stand-in: %v", in.Notes)
	}
	ran := map[string]verdict.Verdict{}
	for _, r := range runner.Run(ref.Key(), st.Register, runner.Options{}) {
		ran[r.Rule] = r.Verdict
		if r.Verdict == verdict.Fail || r.Verdict == verdict.Unknown {
			t.Errorf("%s: %s: %s", r.Rule, r.Verdict, r.Reason)
		}
	}
	for _, id := range []string{"BR-2.3", "BR-3.1", "BR-5.1", "BR-5.4"} {
		if ran[id] != verdict.Pass {
			t.Errorf("%s: want pass on the container, got %q", id, ran[id])
		}
	}
	stopped = true
	if err := st.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	containers.AssertSessionEmpty(t)
}

// The same container bound with broker.Check, the rule author's entry point.
func TestContainerCheck(t *testing.T) {
	containers.Need(t, kafka.StandInImage)
	t.Setenv(kafka.ImageEnv, kafka.StandInImage)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kt, err := kafka.Run(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last-registered first: the removal, then the check
	// that it removed everything, both after the parallel subtests.
	t.Cleanup(func() { containers.AssertSessionEmpty(t) })
	t.Cleanup(func() {
		if err := kt.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	tg := registry.KafkaBrokerTarget(kt)
	broker.Check(t, tg.Target, tg.Hooks())
}

// An image that is not on the host is an unavailable target in one line:
// nothing is pulled, and no container is left.
func TestContainerImageAbsent(t *testing.T) {
	containers.Need(t)
	const img = "onceproof/no-such-kafka:absent"
	t.Setenv(kafka.ImageEnv, img)
	_, _, err := startContainer(t)
	// target.Unavailable keeps the cause's text, not its chain.
	if !errors.Is(err, target.ErrUnavailable) || !strings.Contains(err.Error(), containers.ErrNoImage.Error()) {
		t.Fatalf("want an unavailable target for want of the image, got %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, img) || strings.Contains(msg, "\n") {
		t.Errorf("want one line naming %s, got %q", img, msg)
	}
	containers.AssertSessionEmpty(t)
}
