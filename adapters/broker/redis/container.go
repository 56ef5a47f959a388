package redis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/testcontainers/testcontainers-go"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"

	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/nemesis"
	"github.com/onceproof/tck/internal/options"
	"github.com/onceproof/tck/mq"
)

// DefaultImage is the image of the container target; scripts/build-images.sh
// builds it locally under this name from the host's Debian redis-server
// package (FROM scratch: nothing is pulled). ImageEnv overrides it; the
// official image of the same name works as well.
const DefaultImage = "redis:7"

// ImageEnv names the variable that overrides DefaultImage.
const ImageEnv = "TCK_REDIS_IMAGE"

// Image is the image to use: $TCK_REDIS_IMAGE, else DefaultImage.
func Image() string {
	if v := os.Getenv(ImageEnv); v != "" {
		return v
	}
	return DefaultImage
}

// startContainer starts a redis-server in a container (labelled like every
// container of the kit, port 6379 on a loopback port of the host), with the
// append-only file fsynced on every write, and waits until it answers.
func startContainer(ctx context.Context, image string) (*containers.Container, string, error) {
	if image == "" {
		image = Image()
	}
	c, err := containers.Start(ctx, containers.Spec{
		Role: "redis", Image: image, Module: redisModule,
		Cmd: []string{"redis-server", "--port", "6379", "--bind", "0.0.0.0", "--protected-mode", "no",
			"--dir", "/data", "--save", "", "--appendonly", "yes", "--appendfsync", "always"},
		Ports:   []string{"6379/tcp"},
		WaitLog: "Ready to accept connections",
		Ready: func(ctx context.Context, c *containers.Container) error {
			rdb, err := dial(ctx, "redis://"+c.Endpoint("6379/tcp")+"/0", nil)
			if err != nil {
				return err
			}
			return rdb.Close()
		},
	})
	if err != nil {
		return nil, "", err
	}
	return c, "redis://" + c.Endpoint("6379/tcp") + "/0", nil
}

// Run starts one redis-server container for the run from image ("":
// Image()) through the testcontainers-go Redis module. Rules
// that restart a server (BR-3.1) get a container of their own, restarted
// for real: gracefully (docker stop: redis-server writes its append-only
// file and exits) or abruptly (SIGKILL). Stop removes every container the
// target started, a rule's own included.
func Run(ctx context.Context, image string, opts ...Option) (*Target, error) {
	client := options.Apply(opts).client
	c, url, err := startContainer(ctx, image)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	owned := []*containers.Container{c}
	remove := func() error {
		mu.Lock()
		defer mu.Unlock()
		var errs []error
		for _, c := range owned {
			errs = append(errs, c.Remove(context.Background()))
		}
		owned = nil
		return errors.Join(errs...)
	}
	t, err := newTarget(ctx, url, client, remove)
	if err != nil {
		return nil, errors.Join(err, remove())
	}
	delete(t.Lacks, "broker-restart")
	t.Private = func(ctx context.Context) (*OwnServer, error) {
		s, c, err := startOwn(ctx, image, t.Client)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		owned = append(owned, c)
		mu.Unlock()
		return s, nil
	}
	t.Config["restartable"] = "true"
	t.Version += " (container)"
	t.Config["image"] = c.Spec.Image
	t.Notes = append(t.Notes, fmt.Sprintf("container %s from image %s, removed when the run ends", c.Name, c.Spec.Image))
	return t, nil
}

// OwnServer is a redis-server of a rule's own (a container, or a child
// process of the kit), which the rule may restart.
type OwnServer struct {
	url     string
	client  Client
	restart func(ctx context.Context, abrupt bool) error
	stop    func() error
}

func startOwn(ctx context.Context, image string, client Client) (*OwnServer, *containers.Container, error) {
	c, url, err := startContainer(ctx, image)
	if err != nil {
		return nil, nil, err
	}
	s := &OwnServer{url: url, client: client, stop: func() error { return c.Remove(context.Background()) }}
	// Restart stops the container (SIGTERM) or kills it (SIGKILL), starts it
	// again on the same data directory and loopback port, and waits until
	// the server answers.
	s.restart = func(ctx context.Context, abrupt bool) error {
		k := nemesis.Restart
		if abrupt {
			k = nemesis.Kill
		}
		return nemesis.New(nil).Apply(ctx, k, nemesis.Target{Name: "redis", Container: c, Ready: s.ready}, 0)
	}
	return s, c, nil
}

// ready is nil once the server answers.
func (s *OwnServer) ready(ctx context.Context) error {
	rdb, err := dial(ctx, s.url, nil)
	if err != nil {
		return err
	}
	return rdb.Close()
}

// Open opens a handle on the rule's own server.
func (s *OwnServer) Open(ctx context.Context) (mq.Broker, error) { return s.client.Open(ctx, s.url) }

// Restart restarts the server gracefully, or abruptly (SIGKILL), on the
// same data directory and port, and waits until it answers.
func (s *OwnServer) Restart(ctx context.Context, abrupt bool) error { return s.restart(ctx, abrupt) }

// Sync reads the server's persistence settings (CONFIG GET).
func (s *OwnServer) Sync(ctx context.Context) (string, bool, error) {
	rdb, err := dial(ctx, s.url, nil)
	if err != nil {
		return "", false, err
	}
	defer rdb.Close()
	cfg := map[string]string{}
	for _, p := range []string{"appendonly", "appendfsync"} {
		v, err := rdb.ConfigGet(ctx, p).Result()
		if err != nil {
			return "", false, fmt.Errorf("CONFIG GET %s: %w", p, err)
		}
		cfg[p] = v[p]
	}
	return fmt.Sprintf("appendonly %s, appendfsync %s (read with CONFIG GET)", cfg["appendonly"], cfg["appendfsync"]), CanLoseAcked(cfg), nil
}

// Stop removes the server and its data.
func (s *OwnServer) Stop() error { return s.stop() }

// redisModule runs the server through testcontainers-go's Redis module.
func redisModule(ctx context.Context, img string, opts ...testcontainers.ContainerCustomizer) (testcontainers.Container, error) {
	c, err := tcredis.Run(ctx, img, opts...)
	if c == nil {
		return nil, err
	}
	return c.Container, err
}
