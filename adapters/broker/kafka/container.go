package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/nemesis"
	"github.com/onceproof/tck/internal/options"
	"github.com/onceproof/tck/internal/procs"
	"github.com/onceproof/tck/mq"
)

// StandInImage is the kit's stand-in for a Kafka image, built by
// scripts/build-images.sh (kfake): an emulator, not Kafka. The kit knows
// it by its label, whatever it is tagged.
const StandInImage = "onceproof/kfake-broker:local"

// standInLabel marks the stand-in image (internal/images/kfake/Dockerfile).
const standInLabel = "org.onceproof.tck.emulator"

// clusterID is the id of every cluster the kit starts in a container:
// base64url of "onceproof-tck-v1".
const clusterID = "b25jZXByb29mLXRjay12MQ"

// kafkaPort is the PLAINTEXT listener inside the container.
const kafkaPort = "9092/tcp"

// containerStart bounds a container's start: a JVM broker formats its
// storage and elects itself controller first.
const containerStart = 2 * time.Minute

// Container is a single-node KRaft broker in a container of the kit.
type Container struct {
	c    *containers.Container
	Seed string // 127.0.0.1:port, the host port it advertises
	// Guess is the Kafka version its ApiVersions answer matches (kversion).
	Guess string
	// Emulator says the image is the kit's kfake stand-in.
	Emulator bool
}

// kraftEnv configures a single-node KRaft broker the way the official
// apache/kafka image reads its environment; the advertised listener names
// the host's loopback port, which the client reaches through Docker's port
// binding.
func kraftEnv(seed string) map[string]string {
	return map[string]string{
		"KAFKA_NODE_ID":                                  "1",
		"KAFKA_PROCESS_ROLES":                            "broker,controller",
		"KAFKA_LISTENERS":                                "PLAINTEXT://:9092,CONTROLLER://:9093",
		"KAFKA_ADVERTISED_LISTENERS":                     "PLAINTEXT://" + seed,
		"KAFKA_CONTROLLER_LISTENER_NAMES":                "CONTROLLER",
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP":           "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"KAFKA_CONTROLLER_QUORUM_VOTERS":                 "1@localhost:9093",
		"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR":         "1",
		"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
		"KAFKA_TRANSACTION_STATE_LOG_MIN_ISR":            "1",
		"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS":         "0",
		// The KRaft storage is formatted with it (a 16-byte id, base64url).
		"CLUSTER_ID": clusterID,
	}
}

// ContainerOption tunes a Kafka container (StartContainer).
type ContainerOption func(*containerOptions)

type containerOptions struct {
	image string
}

// WithImage runs image instead of the one TCK_KAFKA_IMAGE names.
func WithImage(image string) ContainerOption {
	return func(o *containerOptions) { o.image = image }
}

// StartContainer starts the image (WithImage, or TCK_KAFKA_IMAGE; neither is
// ErrNoImage) as a single-node KRaft broker (labelled like every container
// of the kit, its listener on a loopback port of the host) and waits until a
// metadata request answers. An image that is not on the host is an error
// wrapping containers.ErrNoImage: nothing is pulled.
func StartContainer(ctx context.Context, opts ...ContainerOption) (*Container, error) {
	o := containerOptions{image: os.Getenv(ImageEnv)}
	for _, f := range opts {
		f(&o)
	}
	image := o.image
	if image == "" {
		return nil, ErrNoImage
	}
	port, err := procs.FreePort()
	if err != nil {
		return nil, err
	}
	seed := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	out := &Container{Seed: seed}
	c, err := containers.Start(ctx, containers.Spec{
		Role: "kafka", Image: image,
		Env:       kraftEnv(seed),
		Ports:     []string{kafkaPort},
		HostPorts: map[string]int{kafkaPort: port},
		Timeout:   containerStart,
		Ready: func(ctx context.Context, _ *containers.Container) error {
			g, err := answers(ctx, seed)
			out.Guess = g
			return err
		},
	})
	if errors.Is(err, containers.ErrNoImage) {
		return nil, fmt.Errorf("%s=%s: %w (this Docker has no registry: docker load a Kafka image, or build the kit's kfake stand-in, an emulator, with scripts/build-images.sh kfake and name %s)", ImageEnv, image, containers.ErrNoImage, StandInImage)
	}
	if err != nil {
		return nil, err
	}
	out.c = c
	out.Emulator = isStandIn(ctx, image)
	return out, nil
}

// answers is nil once a metadata request to seed answers naming a broker;
// it returns the Kafka version the broker's ApiVersions match.
func answers(ctx context.Context, seed string) (string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.DialTimeout(2*time.Second), kgo.RequestRetries(0))
	if err != nil {
		return "", err
	}
	defer cl.Close()
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	md, err := adm.BrokerMetadata(actx)
	if err != nil {
		return "", err
	}
	if len(md.Brokers) == 0 || md.Controller < 0 {
		return "", errors.New("metadata names no broker or no controller yet")
	}
	vs, err := adm.ApiVersions(actx)
	if err != nil {
		return "", err
	}
	for _, v := range vs.Sorted() {
		if v.Err == nil {
			return v.VersionGuess(), nil
		}
	}
	return "", errors.New("no broker answered ApiVersions")
}

// isStandIn says whether image carries the stand-in's label.
func isStandIn(ctx context.Context, image string) bool {
	dc, err := containers.Client(ctx)
	if err != nil {
		return false
	}
	r, err := dc.ImageInspect(ctx, image)
	return err == nil && r.Config != nil && r.Config.Labels[standInLabel] != ""
}

// Run starts image ("": the one ImageEnv names) as a single-node KRaft
// broker and binds the kit to it as Open does. Rules that restart a
// server (BR-3.1) get a container of their own, stopped (SIGTERM) or
// killed (SIGKILL) and started again. Stop removes every container the
// target started.
func Run(ctx context.Context, img string, opts ...Option) (*Target, error) {
	client := options.Apply(opts).client
	if img == "" {
		img = os.Getenv(ImageEnv)
	}
	if img == "" {
		return nil, ErrNoImage
	}
	c, err := StartContainer(ctx, WithImage(img))
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	owned := []*containers.Container{c.c}
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
	client.Options.Seeds = []string{c.Seed}
	t, err := newTarget(ctx, client, remove)
	if err != nil {
		if rerr := remove(); rerr != nil {
			return nil, fmt.Errorf("%w (and removing its container: %v)", err, rerr)
		}
		return nil, err
	}
	own := t.Client
	t.Private = func(ctx context.Context) (Server, error) {
		s, err := startOwnContainer(ctx, own, img)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		owned = append(owned, s.c.c)
		mu.Unlock()
		return s, nil
	}
	t.Address = "kafka://" + c.Seed
	// Kafka names its version nowhere in the protocol: the version its
	// ApiVersions answer matches is the best reading. kfake implements a
	// subset of the keys, which no release matches, so the stand-in is
	// named instead (the report adds "(emulator)").
	t.Version = "Kafka " + c.Guess + " (guessed from its ApiVersions), franz-go " + FranzVersion
	if c.Emulator {
		t.Version = "kfake (the kit's stand-in image), franz-go " + FranzVersion
	}
	t.Emulator = c.Emulator
	t.Config["image"] = img
	t.Config["restartable"] = "a rule's own container from the same image: docker stop (SIGTERM) or kill (SIGKILL), then start"
	t.Notes = append(t.Notes, fmt.Sprintf("container %s from image %s (single-node KRaft, listener advertised as %s), removed when the run ends", c.c.Name, img, c.Seed))
	if c.Emulator {
		t.Notes = append(t.Notes, fmt.Sprintf("emulator: image %s is the kit's stand-in (franz-go's kfake in a container, label %s), not a Kafka deployment; a pass certifies the container mode and the client-side contract, not a Kafka server", img, standInLabel))
	}
	return t, nil
}

// Server is a cluster of a rule's own that the rule may restart (BR-3.1).
type Server interface {
	Open(ctx context.Context) (mq.Broker, error)
	Restart(ctx context.Context, abrupt bool) error
	Sync(ctx context.Context) (setting string, canLoseAcked bool, err error)
	Stop() error
}

// ownContainer is a rule's own broker container.
type ownContainer struct {
	client Client
	c      *Container
}

func startOwnContainer(ctx context.Context, client Client, image string) (*ownContainer, error) {
	c, err := StartContainer(ctx, WithImage(image))
	if err != nil {
		return nil, err
	}
	client.Options.Seeds = []string{c.Seed}
	return &ownContainer{client: client, c: c}, nil
}

func (s *ownContainer) Open(ctx context.Context) (mq.Broker, error) { return s.client.Open(ctx) }

// Restart stops the container (SIGTERM) or kills it (SIGKILL), starts it
// again on the same filesystem and loopback port, and waits until a
// metadata request answers.
func (s *ownContainer) Restart(ctx context.Context, abrupt bool) error {
	k := nemesis.Restart
	if abrupt {
		k = nemesis.Kill
	}
	ready := func(ctx context.Context) error {
		_, err := answers(ctx, s.c.Seed)
		return err
	}
	return nemesis.New(nil).Apply(ctx, k, nemesis.Target{Name: "kafka", Container: s.c.c, Ready: ready}, 0)
}

// Sync names the setting the kit leaves at Kafka's default.
func (s *ownContainer) Sync(context.Context) (string, bool, error) {
	if s.c.Emulator {
		return "kfake DataDir without SyncWrites (the stand-in): fsync on segment roll and shutdown only", true, nil
	}
	return "log.flush.interval.messages left at Kafka's default (no fsync per batch; replication is the durability, and this broker has no replica)", true, nil
}

func (s *ownContainer) Stop() error { return s.c.Remove(context.Background()) }

// Remove stops and removes the container with its volumes.
func (c *Container) Remove(ctx context.Context) error { return c.c.Remove(ctx) }
