package registry

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/coservice"
	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/suites/consumer"
)

// ServiceRole labels the containers of consumer services.
const ServiceRole = "consumer-service"

// containerStarted is consumer/process=container:IMAGE: each run of a
// replica is `docker run --rm` of the local image on the host's network
// (the proxy and the sinks listen on loopback), with the data directory
// mounted at the same path and the kit's variables forwarded. The docker
// CLI is the supervised process; a kill is `docker kill --signal KILL` of
// the run's container, then SIGKILL of the CLI; a restart runs the same
// command again.
func containerStarted(ctx context.Context, ref target.Ref) (*target.Started, error) {
	image := ref.Image()
	if err := containers.Available(ctx); err != nil {
		return nil, target.Unavailable(ref, err)
	}
	if out, err := exec.CommandContext(ctx, "docker", "image", "inspect", "--format", "{{.Id}}", image).CombinedOutput(); err != nil {
		return nil, target.Unavailable(ref, fmt.Errorf("%w: %s (the kit pulls nothing; build it locally, e.g. examples/consumer-service/go/build-image.sh): %s",
			containers.ErrNoImage, image, strings.TrimSpace(string(out))))
	}
	// Whatever a run left (a container whose create was on its way when
	// its CLI was killed) goes at the end, by this session's label.
	untrack := leftovers.Track("consumer service containers (session "+containers.SessionID()+")", removeServiceContainers)
	labels := containers.Labels(ServiceRole)
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	// $$ is the pid of this shell, which exec makes the docker CLI: the
	// container's name is known from the pid the kit supervises.
	b.WriteString(`exec docker run --rm --name "onceproof-svc-$$" --network host -v "$ONCEPROOF_DATA_DIR:$ONCEPROOF_DATA_DIR"`)
	for _, k := range keys {
		fmt.Fprintf(&b, " --label %s=%s", k, labels[k])
	}
	for _, v := range coservice.Env { // every variable the kit gives a service, forwarded by name
		b.WriteString(" -e " + v)
	}
	b.WriteString(` "$0"`)
	svc := &consumer.Service{Args: []string{"sh", "-c", b.String(), image}, Kill: killServiceContainer}
	release := func() error {
		err := removeServiceContainers()
		if err == nil {
			untrack()
		}
		return err
	}
	return bindService(ctx, ref, svc, target.Redact(ref.Address), "image", image+" (docker run --rm on the host network, one container per run)", release)
}

// killServiceContainer ends the container of the run whose docker CLI is
// pid, at once (SIGKILL). A container not there (yet, or any more) is fine.
func killServiceContainer(pid int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = exec.CommandContext(ctx, "docker", "kill", "--signal", "KILL", fmt.Sprintf("onceproof-svc-%d", pid)).Run()
}

// removeServiceContainers removes every service container of this session.
// A container that exited (a crash rule killed it) is being removed by
// docker itself (--rm): the engine answers "removal ... already in
// progress", and the list is read again until it is empty.
func removeServiceContainers() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		out, err := exec.CommandContext(ctx, "docker", "ps", "-aq",
			"--filter", "label="+containers.LabelSession+"="+containers.SessionID(),
			"--filter", "label="+containers.LabelRole+"="+ServiceRole).Output()
		if err != nil {
			return fmt.Errorf("listing consumer service containers: %w", err)
		}
		ids := strings.Fields(string(out))
		if len(ids) == 0 {
			return nil
		}
		b, err := exec.CommandContext(ctx, "docker", append([]string{"rm", "-f"}, ids...)...).CombinedOutput()
		if err == nil {
			return nil
		}
		if !removing(string(b)) || ctx.Err() != nil {
			return errors.New("removing consumer service containers: " + strings.TrimSpace(string(b)))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// removing says every error line of a docker rm (the others are the ids
// it removed) names a container already on its way out (gone, or its
// removal in progress).
func removing(out string) bool {
	errs := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, "Error") {
			continue
		}
		errs++
		if !strings.Contains(line, "already in progress") && !strings.Contains(line, "No such container") {
			return false
		}
	}
	return errs > 0
}
