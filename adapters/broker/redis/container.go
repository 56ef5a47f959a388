package redis

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/onceproof/tck/internal/containers"
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

// StartContainer starts a redis-server in a container (labelled like every
// container of the kit, port 6379 on a loopback port of the host), with the
// append-only file fsynced on every write, and waits until it answers.
func StartContainer(ctx context.Context) (*containers.Container, string, error) {
	c, err := containers.Start(ctx, containers.Spec{
		Role: "redis", Image: Image(),
		Cmd: []string{"redis-server", "--port", "6379", "--bind", "0.0.0.0", "--protected-mode", "no",
			"--dir", "/data", "--save", "", "--appendonly", "yes", "--appendfsync", "always"},
		Ports:   []string{"6379/tcp"},
		WaitLog: "Ready to accept connections",
		Ready: func(ctx context.Context, c *containers.Container) error {
			rdb, err := dial(ctx, "redis://"+c.Endpoint("6379/tcp")+"/0")
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

// ContainerTarget starts one redis-server container for the run; Stop
// removes it.
func ContainerTarget(ctx context.Context, client Client) (*Target, error) {
	c, url, err := StartContainer(ctx)
	if err != nil {
		return nil, err
	}
	remove := func() error { return c.Remove(context.Background()) }
	t, err := newTarget(ctx, url, client, remove)
	if err != nil {
		return nil, errors.Join(err, remove())
	}
	t.Version += " (container)"
	t.Config["image"] = c.Spec.Image
	t.Notes = append(t.Notes, fmt.Sprintf("container %s from image %s, removed when the run ends", c.Name, c.Spec.Image))
	return t, nil
}
