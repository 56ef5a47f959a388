package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tcrabbit "github.com/testcontainers/testcontainers-go/modules/rabbitmq"

	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/options"
)

// DefaultImage is the image of the container target; scripts/build-images.sh
// builds it locally under this name from the host's Debian rabbitmq-server
// and erlang packages, with the management plugin enabled (FROM scratch:
// nothing is pulled). ImageEnv overrides it; the official image of the same
// name works as well.
const DefaultImage = "rabbitmq:3.10-management"

// ImageEnv names the variable that overrides DefaultImage.
const ImageEnv = "TCK_RABBITMQ_IMAGE"

// Image is the image to use: $TCK_RABBITMQ_IMAGE, else DefaultImage.
func Image() string {
	if v := os.Getenv(ImageEnv); v != "" {
		return v
	}
	return DefaultImage
}

// Container ports: AMQP and the management API (HTTP).
const (
	amqpPort = tcrabbit.DefaultAMQPPort // "5672/tcp"
	mgmtPort = tcrabbit.DefaultHTTPPort // "15672/tcp"
)

// container is a RabbitMQ node of the kit's in a Docker container.
type container struct {
	// URL reaches AMQP: amqp://user:password@127.0.0.1:port/ (the
	// default vhost "/").
	URL string
	// MgmtURL is the management API's base: http://127.0.0.1:port (the
	// same user and password as URL; the user is an administrator).
	MgmtURL string
	// User and Pass are the node's one user, made at its first boot.
	User, Pass string
	// Container is the container itself (its name, logs, a nemesis).
	Container *containers.Container
	// Stop removes the container and its data.
	Stop func() error
}

// runContainer starts a RabbitMQ node from image in a container (with
// consumer_timeout when it is positive) through
// testcontainers-go's RabbitMQ module (its Run: its configuration file and
// environment, the kit's user with a fresh password), labelled and tracked
// like every container of the kit (an interrupt removes it), with AMQP and
// the management API published on loopback ports of the host only, and
// waits until both answer. A missing Docker engine is an error wrapping
// containers.ErrNoDocker, a missing image one wrapping containers.ErrNoImage
// that says how to build it.
func runContainer(ctx context.Context, image string, consumerTimeout time.Duration) (*container, error) {
	user, pass := "tck", nonce()+nonce()
	// The module renders its configuration file (the default user) to one
	// fixed path under the temporary folder, shared by every start in
	// every process: the kit copies the same lines in after the module's
	// copy, so two nodes starting at once cannot swap passwords.
	conf := fmt.Sprintf("# Written by the kit, as testcontainers' RabbitMQ module does\ndefault_user = %s\ndefault_pass = %s\n", user, pass)
	files := map[string]string{"/etc/rabbitmq/rabbitmq-testcontainers.conf": conf}
	if consumerTimeout > 0 {
		files["/etc/rabbitmq/rabbitmq-testcontainers.conf"] += fmt.Sprintf("consumer_timeout = %d\n", consumerTimeout.Milliseconds())
		files["/etc/rabbitmq/advanced.config"] = preciseTimeout
	}
	r := &container{User: user, Pass: pass}
	c, err := containers.Start(ctx, containers.Spec{
		Role: "rabbitmq", Image: image, Module: rabbitModule(user, pass),
		Ports:   []string{amqpPort, mgmtPort},
		Files:   files,
		WaitLog: "Server startup complete",
		// An Erlang node boots on one core's worth of CPU for tens of
		// seconds on a loaded host.
		Timeout: bootWait,
		Ready: func(ctx context.Context, c *containers.Container) error {
			conn, err := dial(ctx, "amqp://"+user+":"+pass+"@"+c.Endpoint(amqpPort)+"/", nil)
			if err != nil {
				return err
			}
			conn.Close()
			return getOverview(ctx, "http://"+c.Endpoint(mgmtPort), user, pass)
		},
	})
	if err != nil {
		return nil, err
	}
	r.Container = c
	r.URL = "amqp://" + user + ":" + pass + "@" + c.Endpoint(amqpPort) + "/"
	r.MgmtURL = "http://" + c.Endpoint(mgmtPort)
	r.Stop = func() error { return c.Remove(context.Background()) }
	return r, nil
}

// getOverview is nil once GET /api/overview answers 200 to user.
func getOverview(ctx context.Context, base, user, pass string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/overview", nil)
	if err != nil {
		return err
	}
	req.SetBasicAuth(user, pass)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("management API: GET /api/overview: HTTP %d", resp.StatusCode)
	}
	return nil
}

// rabbitModule runs the node through testcontainers-go's RabbitMQ module,
// with user and pass as its default user.
func rabbitModule(user, pass string) containers.Runner {
	return func(ctx context.Context, img string, opts ...testcontainers.ContainerCustomizer) (testcontainers.Container, error) {
		opts = append([]testcontainers.ContainerCustomizer{
			tcrabbit.WithAdminUsername(user), tcrabbit.WithAdminPassword(pass),
		}, opts...)
		c, err := tcrabbit.Run(ctx, img, opts...)
		if c == nil {
			return nil, err
		}
		return c.Container, err
	}
}

// Run starts a RabbitMQ node from image ("": Image()) in a container
// through testcontainers-go's RabbitMQ module, the management API enabled
// and consumer_timeout at WithAckWait's (else RabbitMQ's default, and the
// rules needing an ack wait are not-applicable), and binds the kit to it
// as Open does. Stop removes the container.
func Run(ctx context.Context, image string, opts ...Option) (*Target, error) {
	st := options.Apply(opts)
	if image == "" {
		image = Image()
	}
	c, err := runContainer(ctx, image, st.ackWait)
	if err != nil {
		return nil, err
	}
	client := st.client
	client.Options.ConsumerTimeout = st.ackWait
	t, err := newTarget(ctx, c.URL, client, c.Stop)
	if err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	t.Management = c.MgmtURL
	t.Address = "container " + c.Container.Name + " at amqp://" + c.Container.Endpoint(amqpPort) + "/"
	t.Version += " (container)"
	t.Config["image"] = image
	t.Lacks["broker-restart"] = "broker/rabbitmq=container starts no second node for a rule to restart (broker/rabbitmq without an address does, from PATH)"
	t.Notes = append(t.Notes, fmt.Sprintf("container %s from image %s, removed when the run ends", c.Container.Name, image))
	return t, nil
}
