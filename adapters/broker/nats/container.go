package nats

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tcnats "github.com/testcontainers/testcontainers-go/modules/nats"

	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/nemesis"
	"github.com/onceproof/tck/internal/options"
	"github.com/onceproof/tck/mq"
)

// DefaultImage is the official image name and the tag of the server the
// kit is built against; scripts/build-images.sh builds it locally under this
// name. ImageEnv overrides it.
const DefaultImage = "nats:2.15.2"

// ImageEnv names the variable that overrides DefaultImage.
const ImageEnv = "TCK_NATS_IMAGE"

// Image is the image to use: $TCK_NATS_IMAGE, else DefaultImage.
func Image() string {
	if v := os.Getenv(ImageEnv); v != "" {
		return v
	}
	return DefaultImage
}

// ContainerOption tunes a nats-server container (StartContainer,
// StartContainerServer, StartCluster).
type ContainerOption func(*containerOptions)

// WithImage runs image instead of Image().
func WithImage(image string) ContainerOption {
	return func(o *containerOptions) { o.Image = image }
}

// WithSyncAlways makes JetStream fsync every write (sync_interval: always).
func WithSyncAlways() ContainerOption {
	return func(o *containerOptions) { o.SyncAlways = true }
}

func newContainerOptions(opts []ContainerOption) containerOptions {
	var o containerOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

type containerOptions struct {
	Image string // default Image()
	// SyncAlways makes JetStream fsync every write (sync_interval: always);
	// the default is the server's (a periodic sync), which can lose acked
	// writes on power loss, and the report says so.
	SyncAlways bool
	// Network, Name, Cluster and Routes join the server to a cluster (see
	// StartCluster).
	network *containers.Network
	Name    string
	Cluster string
	Routes  []string
}

// Container is a nats-server container with JetStream on file storage.
type Container struct {
	c       *containers.Container
	URL     string // nats://127.0.0.1:port
	Monitor string // http://127.0.0.1:port
	Version string // as the server reports it
	cluster bool   // a member of a cluster
}

// StartContainer starts a nats-server with JetStream, file storage in the
// container, client and monitoring ports on loopback.
func StartContainer(ctx context.Context, opts ...ContainerOption) (*Container, error) {
	return startContainer(ctx, newContainerOptions(opts))
}

func startContainer(ctx context.Context, o containerOptions) (*Container, error) {
	if o.Image == "" {
		o.Image = Image()
	}
	cmd := []string{"-js", "-sd", "/data", "-p", "4222", "-m", "8222"}
	if o.Name != "" {
		cmd = append(cmd, "--name", o.Name)
	}
	if o.Cluster != "" {
		// no_advertise: clients keep to the loopback URLs they were given
		// and never learn the private network's addresses.
		cmd = append(cmd, "--cluster_name", o.Cluster, "--cluster", "nats://0.0.0.0:6222",
			"--routes", strings.Join(o.Routes, ","), "--no_advertise")
	}
	var version string
	spec := containers.Spec{
		Role: "nats", Image: o.Image, Name: o.Name, Network: o.network,
		Module:  natsModule,
		Cmd:     cmd,
		Ports:   []string{"4222/tcp", "8222/tcp"},
		WaitLog: "Server is ready",
		Ready: func(ctx context.Context, c *containers.Container) error {
			v, err := serverInfo(ctx, c.Endpoint("4222/tcp"))
			if err != nil {
				return err
			}
			version = v
			if o.Cluster != "" {
				// A member's JetStream answers only once the cluster has a
				// meta leader: StartCluster waits for that.
				return nil
			}
			return ping(ctx, "nats://"+c.Endpoint("4222/tcp"))
		},
	}
	if o.Name != "" {
		spec.Aliases = []string{o.Name}
	}
	if o.SyncAlways {
		// The setting exists only in the configuration file, so the kit
		// copies one in before the start (no shell needed in the image).
		spec.Files = map[string]string{"/tck-sync.conf": "jetstream { sync_interval: always }\n"}
		spec.Cmd = append(spec.Cmd, "--config", "/tck-sync.conf")
	}
	c, err := containers.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &Container{
		c:       c,
		URL:     "nats://" + c.Endpoint("4222/tcp"),
		Monitor: "http://" + c.Endpoint("8222/tcp"),
		Version: version,
		cluster: o.Cluster != "",
	}, nil
}

// serverInfo reads the INFO line a nats-server sends first. Docker's port
// proxy accepts connections before the server listens, so a connect alone
// proves nothing; the INFO line does.
func serverInfo(ctx context.Context, hostport string) (string, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", hostport)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("no INFO from nats-server: %w", err)
	}
	js, ok := strings.CutPrefix(strings.TrimSpace(line), "INFO ")
	if !ok {
		return "", fmt.Errorf("unexpected greeting %q", line)
	}
	var info struct {
		Version string `json:"version"`
	}
	_ = json.Unmarshal([]byte(js), &info)
	return info.Version, nil
}

// SyncSetting reads JetStream's durability setting from the monitoring
// endpoint (/varz).
func (n *Container) SyncSetting(ctx context.Context) (Sync, error) {
	var v struct {
		JetStream struct {
			Config struct {
				SyncInterval time.Duration `json:"sync_interval"`
				SyncAlways   bool          `json:"sync_always"`
			} `json:"config"`
		} `json:"jetstream"`
	}
	if err := getJSON(ctx, n.Monitor+"/varz", &v); err != nil {
		return Sync{}, err
	}
	return Sync{Interval: v.JetStream.Config.SyncInterval, Always: v.JetStream.Config.SyncAlways}, nil
}

// Ping succeeds once the server is ready (after a restart): a client
// connected and JetStream answered; for a cluster member, once it sent its
// INFO line (its JetStream needs the rest of the cluster).
func (n *Container) Ping(ctx context.Context) error {
	if n.cluster {
		_, err := serverInfo(ctx, n.c.Endpoint("4222/tcp"))
		return err
	}
	return ping(ctx, n.URL)
}

// victim is the container as the nemesis hurts it.
func (n *Container) victim(name string) nemesis.Target {
	return nemesis.Target{Name: name, Container: n.c, Ready: n.Ping}
}

func getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return json.Unmarshal(b, v)
}

// syncString spells a container's sync setting as the report shows it.
func syncString(s Sync) string {
	if s.Always {
		return "always (fsync every write)"
	}
	if s.Interval != 0 {
		return "every " + s.Interval.String() + " (acked writes since the last sync can be lost on power loss)"
	}
	return "server default, every 2m0s (acked writes since the last sync can be lost on power loss)"
}

// Run starts one nats-server container for the run from image ("": Image())
// through the testcontainers-go NATS module, JetStream on file storage inside it, the default sync setting (reported). Rules that
// restart a server get a container of their own, restarted for real:
// gracefully (docker stop) or abruptly (SIGKILL). Stop removes every
// container the target started, a rule's own included.
func Run(ctx context.Context, image string, opts ...Option) (*Target, error) {
	client := options.Apply(opts).client
	var copts []ContainerOption
	if image != "" {
		copts = append(copts, WithImage(image))
	}
	n, err := StartContainer(ctx, copts...)
	if err != nil {
		return nil, err
	}
	// The suite stops a rule's own server when the rule ends, which may be
	// after the run returns; the target's Stop removes any still there.
	var mu sync.Mutex
	var privates []*containers.Container
	removeAll := func() error {
		mu.Lock()
		defer mu.Unlock()
		stops := []func() error{func() error { return n.Remove(context.Background()) }}
		for _, c := range privates {
			stops = append(stops, func() error { return c.Remove(context.Background()) })
		}
		return joinStops(stops...)()
	}
	t, err := newTarget(ctx, n.URL, client, removeAll)
	if err != nil {
		_ = removeAll()
		return nil, err
	}
	t.Private = func(ctx context.Context) (Server, error) {
		s, err := StartContainerServer(ctx, client, copts...)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		privates = append(privates, s.Container.c)
		mu.Unlock()
		return s, nil
	}
	t.Version = "nats-server " + n.Version + " (container)"
	t.Config["restartable"] = "true"
	t.Config["image"] = n.c.Spec.Image
	if s, err := n.SyncSetting(ctx); err == nil {
		t.Config["sync"] = syncString(s)
	}
	t.Notes = append(t.Notes, fmt.Sprintf("container %s from image %s, removed when the run ends", n.c.Name, n.c.Spec.Image))
	return t, nil
}

// ContainerServer is a server of a rule's own in a container: restarted for
// real, gracefully (docker stop) or abruptly (SIGKILL).
type ContainerServer struct {
	Container *Container
	client    Client
}

// StartContainerServer starts a nats-server container as a server of a
// rule's own, its handles opened through client.
func StartContainerServer(ctx context.Context, client Client, opts ...ContainerOption) (*ContainerServer, error) {
	n, err := StartContainer(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return &ContainerServer{Container: n, client: client}, nil
}

func (s *ContainerServer) Open(ctx context.Context) (mq.Broker, error) {
	return s.client.Open(ctx, s.Container.URL)
}

// Restart stops the container (SIGTERM: nats-server flushes its stores) or
// kills it (SIGKILL: no flush), starts it again on the same file store and
// loopback port, and waits until the server answers.
func (s *ContainerServer) Restart(ctx context.Context, abrupt bool) error {
	k := nemesis.Restart
	if abrupt {
		k = nemesis.Kill
	}
	return nemesis.New(nil).Apply(ctx, k, s.Container.victim("nats"), 0)
}

func (s *ContainerServer) Sync(ctx context.Context) (string, bool, error) {
	sy, err := s.Container.SyncSetting(ctx)
	if err != nil {
		return "", false, err
	}
	return syncString(sy), sy.CanLoseAcked(), nil
}

func (s *ContainerServer) Stop() error { return s.Container.Remove(context.Background()) }

// Remove stops and removes the container with its volumes.
func (n *Container) Remove(ctx context.Context) error { return n.c.Remove(ctx) }

// Disrupt applies one of the kit's faults to the container, by its name
// ("stop-start", "kill-start", "pause-resume", "partition"), holds it for
// hold and heals it, noting each step on log (a rule's timeline).
func (n *Container) Disrupt(ctx context.Context, kind string, hold time.Duration, log Log) error {
	return nemesis.New(log).Apply(ctx, nemesis.Kind(kind), n.victim("nats"), hold)
}

// natsModule runs the server through testcontainers-go's NATS module.
func natsModule(ctx context.Context, img string, opts ...testcontainers.ContainerCustomizer) (testcontainers.Container, error) {
	c, err := tcnats.Run(ctx, img, opts...)
	if c == nil {
		return nil, err
	}
	return c.Container, err
}
