// Package containers starts the real brokers and stores the kit checks in
// Docker containers, through testcontainers-go, and makes sure nothing of
// the kit is left behind.
//
// Every container and network the kit creates carries the label
// org.onceproof.tck=1, plus the session (one per process) and the process id
// that owns it. Each container is registered with internal/leftovers, by
// name, before it is created, and the session's removal by label once, when
// the first is created: leftovers.RemoveAll (the CLI at exit, the signal
// watcher on SIGINT or SIGTERM) removes them. Remove removes one container;
// CleanupSession everything of this process by label; Cleanup every
// leftover of the kit on the host, and CleanupStale those whose owning
// process is gone.
//
// The testcontainers reaper (Ryuk) needs its own image, which a host without
// a registry cannot pull, so the kit's option is Ryuk off (it does the
// reaping itself, by label). Importing the package changes nothing in the
// process: the setting reaches testcontainers when the kit first creates a
// container (see configure), and the environment is left as it was. The
// user's own TESTCONTAINERS_RYUK_DISABLED or ~/.testcontainers.properties
// wins, as does a configuration testcontainers read before the kit's first
// container. testcontainers' narration goes to a logger given to each
// container (silent unless TCK_DEBUG=1); its process-wide logger is the
// CLI's to silence (Quiet).
//
// A machine without Docker gets an error wrapping ErrNoDocker within a few
// seconds, never a hang.
package containers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/internal/poll"
	"github.com/onceproof/tck/internal/procs"
)

// Labels put on everything the kit creates.
const (
	LabelKit     = "org.onceproof.tck"         // always "1"
	LabelSession = "org.onceproof.tck.session" // one id per process
	LabelPID     = "org.onceproof.tck.pid"     // the owning process
	LabelRole    = "org.onceproof.tck.role"    // what it is, e.g. "nats" or "postgres"
)

// ErrNoDocker says no Docker engine answered. Callers wrap it in
// target.ErrUnavailable.
var ErrNoDocker = errors.New("docker is not available")

// ErrNoImage says the image is not on the host; with no registry it cannot be
// pulled, so the message says how to build it.
var ErrNoImage = errors.New("image not present locally")

// ryuk is the kit's own option for the testcontainers reaper: off, since
// the kit removes what it made by label and a host without a registry cannot
// pull the reaper's image.
const ryuk = false

var configureOnce sync.Once

// configure hands testcontainers the kit's Ryuk setting before its first
// use. testcontainers reads its configuration once per process, from the
// environment and its properties file only, so the variable is set for that
// one read and then put back as it was. A variable the user set is left
// alone and wins.
func configure() {
	configureOnce.Do(func() {
		const key = "TESTCONTAINERS_RYUK_DISABLED"
		if _, set := os.LookupEnv(key); set || ryuk {
			testcontainers.ReadConfig()
			return
		}
		os.Setenv(key, "true") // the only value testcontainers reads as disabled
		testcontainers.ReadConfig()
		os.Unsetenv(key)
	})
}

// Quiet silences testcontainers' process-wide logger (its banner on the
// first Docker call, which no per-container logger reaches) unless
// TCK_DEBUG=1. Only a program that owns its process calls it (the CLI, in
// main): the kit's output is its report. In an author's test binary
// testcontainers keeps the author's logging.
func Quiet() {
	if os.Getenv("TCK_DEBUG") == "" {
		tclog.SetDefault(tclog.NewNoopLogger())
	}
}

// tcLogger is where testcontainers narrates a container's steps: nowhere,
// since the kit's output is its report, unless TCK_DEBUG=1.
func tcLogger() tclog.Logger {
	if os.Getenv("TCK_DEBUG") == "" {
		return tclog.NewNoopLogger()
	}
	return tclog.Default()
}

var (
	sessionOnce sync.Once
	sessionID   string
)

// SessionID is this process's session: all it creates carries it.
func SessionID() string {
	sessionOnce.Do(func() {
		sessionID = fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	})
	return sessionID
}

// Labels returns the labels for a resource of the given role.
func Labels(role string) map[string]string {
	return map[string]string{
		LabelKit:     "1",
		LabelSession: SessionID(),
		LabelPID:     strconv.Itoa(os.Getpid()),
		LabelRole:    role,
	}
}

var (
	cliMu   sync.Mutex
	cli     *client.Client
	cliHost string // the DOCKER_HOST cli was made for
)

// Client returns a Docker client that answered a ping, or an error wrapping
// ErrNoDocker. The ping is bounded so a missing daemon fails fast. The
// client is kept for the process, or until DOCKER_HOST changes.
func Client(ctx context.Context) (*client.Client, error) {
	cliMu.Lock()
	defer cliMu.Unlock()
	host := os.Getenv("DOCKER_HOST")
	if cli != nil && cliHost == host {
		return cli, nil
	}
	// client.FromEnv honours DOCKER_HOST; the default is the local socket.
	c, err := dial(ctx, client.FromEnv)
	if err != nil {
		return nil, err
	}
	// A client made for another DOCKER_HOST is dropped, not closed: a
	// caller may still hold it.
	cli, cliHost = c, host
	return c, nil
}

// dial connects and pings within 5 s.
func dial(ctx context.Context, opts ...client.Opt) (*client.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := client.New(opts...) // the client negotiates the API version by default
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoDocker, err)
	}
	if _, err := c.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		c.Close()
		return nil, fmt.Errorf("%w: %v", ErrNoDocker, firstLine(err.Error()))
	}
	return c, nil
}

// Available reports whether a Docker engine answers (nil) or why not (an
// error wrapping ErrNoDocker).
func Available(ctx context.Context) error {
	_, err := Client(ctx)
	return err
}

// Spec says what container to start.
type Spec struct {
	Role  string // label and name prefix, e.g. "nats"
	Image string
	Env   map[string]string
	Cmd   []string
	// Ports are the container ports to publish, e.g. "4222/tcp"; each is
	// bound to a fixed free port on 127.0.0.1, so it survives a restart of
	// the container (the nemesis restarts them) and is reached on loopback.
	Ports []string
	// HostPorts binds a container port to a loopback port the caller chose
	// (FreePort), for a server that must advertise it (Kafka's advertised
	// listener); the other Ports get one each.
	HostPorts map[string]int
	// Network, with Aliases, attaches the container to a private network
	// (the cluster); otherwise it is on Docker's default bridge.
	Network *Network
	Aliases []string
	Name    string // container name suffix (optional)
	// Files are copied into the container before it starts (path -> content).
	Files map[string]string
	// WaitLog is a log line that says the server is up.
	WaitLog string
	// Ready probes the server from the host once WaitLog was seen, retried
	// until it succeeds or the start deadline passes.
	Ready   func(ctx context.Context, c *Container) error
	Timeout time.Duration // start deadline; 60 s if 0
	// Module is the product's testcontainers-go module (its Run, which
	// lays the product's defaults under the kit's options); nil: the
	// generic testcontainers.Run. The kit's options win: its command, its
	// wait, and exactly Ports published, on loopback.
	Module Runner
}

// Runner runs a container from an image with options: testcontainers.Run,
// or a module's Run with its container type unwrapped.
type Runner func(ctx context.Context, img string, opts ...testcontainers.ContainerCustomizer) (testcontainers.Container, error)

// Container is one running container of the kit.
type Container struct {
	Spec  Spec
	ID    string
	Name  string
	ports map[string]string // container port -> 127.0.0.1:hostport
	tc    *testcontainers.DockerContainer

	untrack func() // drops its leftovers entry once removed
}

// Endpoint is host:port on loopback for a container port such as "4222/tcp".
func (c *Container) Endpoint(port string) string { return c.ports[port] }

// Start starts a container from spec and waits until it is ready. Failures
// wrap ErrNoDocker or ErrNoImage where that is the cause.
func Start(ctx context.Context, spec Spec) (*Container, error) {
	dc, err := Client(ctx)
	if err != nil {
		return nil, err
	}
	trackSession()
	staleOnce.Do(func() {
		// What a killed earlier run left (its owner is gone) goes first.
		_, _ = CleanupStale(ctx)
	})
	if _, err := dc.ImageInspect(ctx, spec.Image); err != nil {
		if err := dockerErr(err); errors.Is(err, ErrNoDocker) {
			return nil, fmt.Errorf("start %s (%s): %w", spec.Role, spec.Image, err)
		}
		return nil, fmt.Errorf("%w: %s (build it with `make images` / scripts/build-images.sh, or name another image with %s)", ErrNoImage, spec.Image, imageVar(spec.Role))
	}
	timeout := spec.Timeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	bindings := network.PortMap{}
	ports := map[string]string{}
	for _, p := range spec.Ports {
		hp, ok := spec.HostPorts[p]
		if !ok {
			var err error
			if hp, err = procs.FreePort(); err != nil {
				return nil, err
			}
		}
		cp, err := network.ParsePort(p)
		if err != nil {
			return nil, err
		}
		bindings[cp] = []network.PortBinding{{HostIP: netip.MustParseAddr(loopback), HostPort: strconv.Itoa(hp)}}
		ports[p] = net.JoinHostPort("127.0.0.1", strconv.Itoa(hp))
	}
	name := "onceproof-" + spec.Role + "-" + shortID()
	if spec.Name != "" {
		name = "onceproof-" + spec.Name + "-" + shortID()
	}
	configure()
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithLogger(tcLogger()),
		testcontainers.WithName(name),
		testcontainers.WithLabels(Labels(spec.Role)),
		testcontainers.WithExposedPorts(spec.Ports...),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = bindings
		}),
	}
	if len(spec.Env) > 0 {
		opts = append(opts, testcontainers.WithEnv(spec.Env))
	}
	if len(spec.Cmd) > 0 {
		opts = append(opts, testcontainers.WithCmd(spec.Cmd...))
	}
	if spec.WaitLog != "" {
		opts = append(opts, testcontainers.WithWaitStrategyAndDeadline(timeout, wait.ForLog(spec.WaitLog).WithStartupTimeout(timeout)))
	} else {
		// No default wait: testcontainers' port check execs a shell inside
		// the container, and the kit's images have none (Ready, if set,
		// decides instead).
		opts = append(opts, testcontainers.WithWaitStrategy(wait.ForNop(func(context.Context, wait.StrategyTarget) error { return nil })))
	}
	for path, content := range spec.Files {
		opts = append(opts, testcontainers.WithFiles(testcontainers.ContainerFile{
			Reader: strings.NewReader(content), ContainerFilePath: path, FileMode: 0o644,
		}))
	}
	if spec.Network != nil {
		opts = append(opts, tcnetwork.WithNetwork(spec.Aliases, spec.Network.tc))
	}
	// Registered by name before it exists: an interrupt during the start
	// removes it whatever step the start is at.
	untrack := leftovers.Track("container "+name, func() error { return removeByName(name) })
	if leftovers.Closing() {
		untrack()
		return nil, leftovers.ErrClosing
	}
	// Create, then start. The create runs to its end whatever happens to
	// ctx: a create cancelled in flight is still carried out by the engine,
	// after the kit has looked for it, and the container would be left
	// behind. Once created it has an ID, and every path below removes it.
	cctx, cancelCreate := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	run := spec.Module
	if run == nil {
		run = func(ctx context.Context, img string, opts ...testcontainers.ContainerCustomizer) (testcontainers.Container, error) {
			c, err := testcontainers.Run(ctx, img, opts...)
			if c == nil {
				return nil, err
			}
			return c, err
		}
	}
	// Last, so a module's own exposed ports (NATS's cluster port) are not
	// published on every interface beside the kit's loopback ones.
	exact := testcontainers.CustomizeRequestOption(func(req *testcontainers.GenericContainerRequest) error {
		req.ExposedPorts = append([]string(nil), spec.Ports...)
		return nil
	})
	ctr, err := run(cctx, spec.Image, append(opts, exact, testcontainers.WithNoStart())...)
	cancelCreate()
	tc, _ := ctr.(*testcontainers.DockerContainer)
	if err == nil && tc == nil && ctr != nil {
		err = fmt.Errorf("the module's container is a %T, not a Docker container", ctr)
	}
	c := &Container{Spec: spec, Name: name, ports: ports, tc: tc, untrack: untrack}
	if tc != nil {
		c.ID = tc.GetContainerID()
	}
	if err != nil {
		c.Remove(context.WithoutCancel(ctx))
		_ = removeByName(name)
		return nil, fmt.Errorf("create %s (%s): %w", spec.Role, spec.Image, dockerErr(err))
	}
	if leftovers.Closing() || ctx.Err() != nil {
		// Interrupted while it was being created.
		c.Remove(context.WithoutCancel(ctx))
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, leftovers.ErrClosing
	}
	if err := tc.Start(ctx); err != nil {
		c.Remove(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("start %s (%s): %w", spec.Role, spec.Image, dockerErr(err))
	}
	if leftovers.Closing() {
		// RemoveAll ran while it was starting.
		c.Remove(context.WithoutCancel(ctx))
		return nil, leftovers.ErrClosing
	}
	if spec.Ready != nil {
		rctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := Retry(rctx, func() error { return spec.Ready(rctx, c) }); err != nil {
			c.Remove(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("%s (%s) not ready: %w", spec.Role, spec.Image, err)
		}
	}
	return c, nil
}

// Remove stops and removes the container with its anonymous volumes.
func (c *Container) Remove(ctx context.Context) error {
	if c == nil || c.ID == "" {
		return nil
	}
	dc, err := Client(ctx)
	if err != nil {
		return err
	}
	_, err = dc.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	// Gone already, or being removed by another path (the suite's own
	// cleanup racing the target's Stop): either way it will not be left.
	if err == nil || strings.Contains(err.Error(), "No such container") {
		if c.untrack != nil {
			c.untrack()
		}
		return nil
	}
	if err != nil && strings.Contains(err.Error(), "already in progress") {
		// Wait for the other removal, so that after Remove it is gone.
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		err := Retry(wctx, func() error {
			if _, err := dc.ContainerInspect(wctx, c.ID, client.ContainerInspectOptions{}); err == nil {
				return errors.New("still being removed")
			}
			return nil
		})
		if err == nil && c.untrack != nil {
			c.untrack()
		}
		return err
	}
	return dockerErr(err)
}

// removeByName removes the container called name, if there is one: the
// leftovers entry of a container, registered before its ID is known.
func removeByName(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dc, err := Client(ctx)
	if err != nil {
		return err
	}
	_, err = dc.ContainerRemove(ctx, name, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && (strings.Contains(err.Error(), "No such container") || strings.Contains(err.Error(), "already in progress")) {
		return nil
	}
	return err
}

// dockerErr marks an error of a Docker call that failed because the
// engine went away (a dead socket) as ErrNoDocker, keeping its text.
func dockerErr(err error) error {
	if err == nil || errors.Is(err, ErrNoDocker) {
		return err
	}
	msg := err.Error()
	for _, s := range []string{"Cannot connect to the Docker daemon", "connection refused", "no such file or directory", "docker.sock"} {
		if strings.Contains(msg, s) {
			return fmt.Errorf("%w: %s", ErrNoDocker, firstLine(msg))
		}
	}
	return err
}

// Logs returns the container's output so far (for evidence on a failure).
func (c *Container) Logs(ctx context.Context) string {
	if c.tc == nil {
		return ""
	}
	rc, err := c.tc.Logs(ctx)
	if err != nil {
		return ""
	}
	defer rc.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for b.Len() < 1<<20 {
		n, err := rc.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String()
}

// Network is a private network of the kit (the cluster's).
type Network struct {
	Name string
	tc   *testcontainers.DockerNetwork
}

// NewNetwork creates a labelled private bridge network.
func NewNetwork(ctx context.Context, role string) (*Network, error) {
	if _, err := Client(ctx); err != nil {
		return nil, err
	}
	trackSession()
	if leftovers.Closing() {
		return nil, leftovers.ErrClosing
	}
	configure()
	n, err := tcnetwork.New(ctx, tcnetwork.WithLabels(Labels(role)))
	if err != nil {
		return nil, fmt.Errorf("create network: %w", err)
	}
	return &Network{Name: n.Name, tc: n}, nil
}

// Remove removes the network (its containers first).
func (n *Network) Remove(ctx context.Context) error {
	if n == nil || n.tc == nil {
		return nil
	}
	return n.tc.Remove(ctx)
}

// Retry calls f until it returns nil or ctx ends, backing off gently.
func Retry(ctx context.Context, f func() error) error {
	if err := poll.Until(ctx, 50*time.Millisecond, time.Second, f); err != nil {
		return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
	}
	return nil
}

const loopback = "127.0.0.1"

var staleOnce sync.Once

var idMu sync.Mutex
var idN int

func shortID() string {
	idMu.Lock()
	defer idMu.Unlock()
	idN++
	return fmt.Sprintf("%d-%d-%d", os.Getpid(), time.Now().UnixMilli()%100000, idN)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func imageVar(role string) string {
	return "TCK_" + strings.ToUpper(strings.NewReplacer("-", "_", "/", "_").Replace(role)) + "_IMAGE"
}
