package containers

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
	"time"
)

// DefaultNATSImage is the official image name and the tag of the server the
// kit is built against; scripts/build-images.sh builds it locally under this
// name. TCK_NATS_IMAGE overrides it.
const DefaultNATSImage = "nats:2.15.2"

// NATSImage is the image to use: TCK_NATS_IMAGE, else the default.
func NATSImage() string { return envOr("TCK_NATS_IMAGE", DefaultNATSImage) }

// NATSOptions tune a nats-server container.
type NATSOptions struct {
	Image string // default NATSImage()
	// SyncAlways makes JetStream fsync every write (sync_interval: always);
	// the default is the server's (a periodic sync), which can lose acked
	// writes on power loss, and the report says so.
	SyncAlways bool
	// Cluster, Name and Routes join the server to a cluster (see StartNATSCluster).
	Network *Network
	Name    string
	Cluster string
	Routes  []string
}

// NATS is a nats-server container with JetStream on file storage.
type NATS struct {
	*Container
	URL     string // nats://127.0.0.1:port
	Monitor string // http://127.0.0.1:port
	Version string // as the server reports it
}

// StartNATS starts a nats-server with JetStream, file storage in the
// container, client and monitoring ports on loopback.
func StartNATS(ctx context.Context, o NATSOptions) (*NATS, error) {
	if o.Image == "" {
		o.Image = NATSImage()
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
	spec := Spec{
		Role: "nats", Image: o.Image, Name: o.Name, Network: o.Network,
		Cmd:     cmd,
		Ports:   []string{"4222/tcp", "8222/tcp"},
		WaitLog: "Server is ready",
		Ready: func(ctx context.Context, c *Container) error {
			v, err := natsInfo(ctx, c.Endpoint("4222/tcp"))
			version = v
			return err
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
	c, err := Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &NATS{
		Container: c,
		URL:       "nats://" + c.Endpoint("4222/tcp"),
		Monitor:   "http://" + c.Endpoint("8222/tcp"),
		Version:   version,
	}, nil
}

// natsInfo reads the INFO line a nats-server sends first. Docker's port
// proxy accepts connections before the server listens, so a connect alone
// proves nothing; the INFO line does.
func natsInfo(ctx context.Context, hostport string) (string, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", hostport)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
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

// Sync reads JetStream's durability setting from the monitoring endpoint
// (/varz): whether every write is fsynced, and the periodic sync interval.
func (n *NATS) Sync(ctx context.Context) (always bool, interval time.Duration, err error) {
	var v struct {
		JetStream struct {
			Config struct {
				SyncInterval time.Duration `json:"sync_interval"`
				SyncAlways   bool          `json:"sync_always"`
			} `json:"config"`
		} `json:"jetstream"`
	}
	if err := getJSON(ctx, n.Monitor+"/varz", &v); err != nil {
		return false, 0, err
	}
	return v.JetStream.Config.SyncAlways, v.JetStream.Config.SyncInterval, nil
}

// Ping waits until the server answers its INFO again (after a restart).
func (n *NATS) Ping(ctx context.Context) error {
	return Retry(ctx, func() error { _, err := natsInfo(ctx, n.Endpoint("4222/tcp")); return err })
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

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
