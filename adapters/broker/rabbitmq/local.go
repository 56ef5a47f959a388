package rabbitmq

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/internal/procs"
	"github.com/onceproof/tck/mq"
)

// ServerBinary is the rabbitmq-server the kit starts itself when no server
// is named (Debian's rabbitmq-server package puts it on PATH).
const ServerBinary = "rabbitmq-server"

// ErrNoServerBinary is returned by RunLocal when rabbitmq-server (or
// epmd, which comes with Erlang) is not on PATH.
var ErrNoServerBinary = errors.New(ServerBinary + " is not on PATH")

// HaveServerBinary reports whether RunLocal can start a server here.
func HaveServerBinary() bool {
	_, err := serverScript()
	return err == nil
}

// serverScript is the rabbitmq-server start script itself. Debian's
// /usr/sbin/rabbitmq-server is a wrapper that refuses any user but root and
// rabbitmq and, for root, runs the server as the rabbitmq user through su:
// the kit runs the script the wrapper runs, as itself, on its own folder.
func serverScript() (string, error) {
	p, err := exec.LookPath(ServerBinary)
	if err != nil {
		return "", fmt.Errorf("%w: install it (Debian: apt-get install rabbitmq-server), or name a server with broker/rabbitmq=amqp://user:password@host:port/vhost", ErrNoServerBinary)
	}
	if _, err := exec.LookPath("epmd"); err != nil {
		return "", fmt.Errorf("%w: epmd (Erlang's port mapper, part of erlang-base) is not on PATH", ErrNoServerBinary)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	if filepath.Base(real) != ServerBinary {
		// The wrapper: the script sits next to it.
		cand := filepath.Join(filepath.Dir(real), ServerBinary)
		if _, err := os.Stat(cand); err != nil {
			return "", fmt.Errorf("%s on PATH is a wrapper (%s) with no %s beside it", p, real, ServerBinary)
		}
		real = cand
	}
	return real, nil
}

// local is one rabbitmq-server of the kit's: loopback only, its own node
// name, Erlang cookie, data and log folders in a temporary folder, its own
// epmd on a port of its own (so no epmd outlives it), consumer_timeout at
// the kit's ack wait, checked every channel tick of 100ms.
type local struct {
	epmd, proc *procs.Proc
	url        string
	streamURL  string // the stream protocol's port (rabbitmq_stream)
	mgmtURL    string // the management API (rabbitmq_management), "" when off
	port       int
	node       string
	rmDir      func() error
	client     *tls.Config // the kit's own TLS client, on a TLS-only server
	queues     queueSet    // what the kit declared here: awaited after a restart
	stopMu     sync.Once
	err        error
}

// localConfig is what a local server is started with.
type localConfig struct {
	consumerTimeout time.Duration
	// management enables rabbitmq_management on a loopback port of its
	// own: BR-6.1 reads queue arguments and policies through it.
	management bool
	// tls, when set, makes AMQP listen with TLS only (the tests of the
	// kit's amqps:// support); client is how the kit itself reaches it.
	tls    *ServerTLS
	client *tls.Config
}

// ServerTLS is the TLS listener of a server of the kit's own: PEM files.
type ServerTLS struct {
	CA, Cert, Key string
	// VerifyPeer makes the server require a client certificate its CA
	// signed (ssl_options.verify and fail_if_no_peer_cert).
	VerifyPeer bool
	// Management enables the management API, over https only, with the
	// same server certificate (management.ssl.*; clients not verified).
	Management bool
}

// TLSServer is a rabbitmq-server of the kit's own whose AMQP listener
// takes TLS only, as a team's hardened server does. Tests start one to
// check amqps:// (docs/tls.md).
type TLSServer struct {
	// URL is amqps://tck:PASSWORD@127.0.0.1:PORT/ (redact before showing).
	URL string
	// Management is the https management API's base URL ("" without it).
	Management string
	l          *local
}

// StartTLSServer starts a rabbitmq-server from PATH whose AMQP listener
// takes TLS only, with s's files; client is the configuration the kit
// checks it is up with (the CA, and a client certificate when s verifies
// peers).
func StartTLSServer(ctx context.Context, s ServerTLS, client *tls.Config) (*TLSServer, error) {
	l, err := startLocal(ctx, localConfig{tls: &s, client: client, management: s.Management})
	if err != nil {
		return nil, err
	}
	return &TLSServer{URL: l.url, Management: l.mgmtURL, l: l}, nil
}

// Stop stops the server and removes its folder.
func (s *TLSServer) Stop() error { return s.l.stop() }

// Tail is the end of the server's output (for a failing test).
func (s *TLSServer) Tail(n int) string { return s.l.proc.Tail(n) }

func startLocal(ctx context.Context, lc localConfig) (*local, error) {
	script, err := serverScript()
	if err != nil {
		return nil, err
	}
	dir, rmDir, err := leftovers.TempDir("tck-rabbitmq-*")
	if err != nil {
		return nil, err
	}
	l, err := startIn(ctx, dir, script, lc)
	if err != nil {
		return nil, errors.Join(err, rmDir())
	}
	l.rmDir = rmDir
	return l, nil
}

// startIn writes the server's files into dir and starts epmd and the
// server; a port taken between the pick and the bind gets another try.
func startIn(ctx context.Context, dir, script string, lc localConfig) (*local, error) {
	pass := nonce() + nonce()
	node := "tck-" + nonce() + "@localhost"
	var last error
	for range 3 {
		ports := make([]int, 5)
		for i := range ports {
			if ports[i], last = procs.FreePort(); last != nil {
				break
			}
		}
		if last != nil {
			continue
		}
		amqpPort, distPort, epmdPort, streamPort, mgmtPort := ports[0], ports[1], ports[2], ports[3], ports[4]
		if err := writeFiles(dir, amqpPort, streamPort, mgmtPort, pass, lc); err != nil {
			return nil, err
		}
		ep, err := procs.Start(ctx, procs.Config{
			Name: "epmd", Lines: 50, Dir: dir,
			Args: []string{"epmd", "-port", fmt.Sprint(epmdPort), "-address", "127.0.0.1"},
		})
		if err != nil {
			return nil, err
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = ep.WaitListening(wctx, fmt.Sprintf("127.0.0.1:%d", epmdPort))
		cancel()
		if err != nil {
			last = err
			_ = ep.Stop(0)
			continue
		}
		env := map[string]string{
			"HOME":                          dir, // the Erlang cookie: $HOME/.erlang.cookie
			"ERL_EPMD_PORT":                 fmt.Sprint(epmdPort),
			"ERL_EPMD_ADDRESS":              "127.0.0.1",
			"ERL_CRASH_DUMP":                filepath.Join(dir, "erl_crash.dump"),
			"RABBITMQ_NODENAME":             node,
			"RABBITMQ_DIST_PORT":            fmt.Sprint(distPort),
			"RABBITMQ_MNESIA_BASE":          filepath.Join(dir, "mnesia"),
			"RABBITMQ_LOG_BASE":             filepath.Join(dir, "log"),
			"RABBITMQ_CONFIG_FILE":          filepath.Join(dir, "rabbitmq.conf"),
			"RABBITMQ_ADVANCED_CONFIG_FILE": filepath.Join(dir, "advanced.config"),
			"RABBITMQ_ENABLED_PLUGINS_FILE": filepath.Join(dir, "enabled_plugins"),
			"RABBITMQ_PLUGINS_EXPAND_DIR":   filepath.Join(dir, "plugins-expand"),
			"RABBITMQ_CONF_ENV_FILE":        filepath.Join(dir, "rabbitmq-env.conf"),
			"RABBITMQ_PID_FILE":             filepath.Join(dir, "rabbitmq.pid"),
			// The epmd above is the node's; it must not start another.
			"RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-start_epmd false",
			// Under a notify socket the script execs erl instead of
			// running it in the background of a shell: the kit's child is
			// the Erlang VM itself, so SIGTERM stops the node gracefully and
			// SIGKILL kills it. The socket does not exist: nothing listens.
			"NOTIFY_SOCKET": filepath.Join(dir, "no-systemd"),
		}
		if lc.tls == nil {
			env["RABBITMQ_NODE_IP_ADDRESS"] = "127.0.0.1"
			env["RABBITMQ_NODE_PORT"] = fmt.Sprint(amqpPort)
		}
		p, err := procs.Start(ctx, procs.Config{Name: "rabbitmq-server", Lines: 300, Dir: dir, Env: env, Args: []string{script}})
		if err != nil {
			_ = ep.Stop(0)
			return nil, err
		}
		l := &local{epmd: ep, proc: p, port: amqpPort, node: node, url: fmt.Sprintf("amqp://tck:%s@127.0.0.1:%d/", pass, amqpPort),
			streamURL: fmt.Sprintf("rabbitmq-stream://tck:%s@127.0.0.1:%d/%%2f", pass, streamPort), client: lc.client}
		if lc.tls != nil {
			l.url = "amqps" + strings.TrimPrefix(l.url, "amqp")
		}
		if lc.management {
			l.mgmtURL = fmt.Sprintf("http://127.0.0.1:%d", mgmtPort)
			if lc.tls != nil {
				l.mgmtURL = fmt.Sprintf("https://127.0.0.1:%d", mgmtPort)
			}
		}
		// An Erlang node boots on one core's worth of CPU for tens of
		// seconds; three booting beside a load of 20-25 were not ready
		// within 90 s (make test beside CPU burners).
		wctx, cancel = context.WithTimeout(ctx, bootWait)
		err = p.WaitReady(wctx, l.ready)
		cancel()
		if err == nil {
			return l, nil
		}
		last = err
		_ = p.Stop(0)
		_ = ep.Stop(0)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("starting %s: %s", ServerBinary, scrubTail(last))
}

// scrubTail keeps an error's text short.
func scrubTail(err error) string {
	if err == nil {
		return "no free port"
	}
	return err.Error()
}

// preciseTimeout is an advanced.config that checks consumer_timeout on
// each channel tick of 50 ms (60 s by default): a precise ack wait.
const preciseTimeout = "[{rabbit, [{channel_tick_interval, 50}]}].\n"

// writeFiles writes the server's configuration, cookie and folders.
func writeFiles(dir string, port, streamPort, mgmtPort int, pass string, lc localConfig) error {
	ct := lc.consumerTimeout
	if ct <= 0 {
		ct = 30 * time.Minute
	}
	listen := []string{fmt.Sprintf("listeners.tcp.default = 127.0.0.1:%d", port)}
	if t := lc.tls; t != nil {
		verify, fail := "verify_none", "false"
		if t.VerifyPeer {
			verify, fail = "verify_peer", "true"
		}
		listen = []string{"listeners.tcp = none",
			fmt.Sprintf("listeners.ssl.default = 127.0.0.1:%d", port),
			"ssl_options.cacertfile = " + t.CA,
			"ssl_options.certfile = " + t.Cert,
			"ssl_options.keyfile = " + t.Key,
			"ssl_options.verify = " + verify,
			"ssl_options.fail_if_no_peer_cert = " + fail}
	}
	conf := strings.Join(append(listen,
		"default_user = tck",
		"default_pass = "+pass,
		"default_vhost = /",
		fmt.Sprintf("consumer_timeout = %d", ct.Milliseconds()),
		"disk_free_limit.absolute = 50MB",
		// The stream protocol (named producers, de-dupe by publishing id),
		// on loopback, advertised as such so the client does not look up
		// the host name.
		fmt.Sprintf("stream.listeners.tcp.1 = 127.0.0.1:%d", streamPort),
		"stream.advertised_host = 127.0.0.1",
		fmt.Sprintf("stream.advertised_port = %d", streamPort),
		"log.console = true",
		"log.console.level = warning",
		"log.file = false",
		""), "\n")
	switch {
	case lc.management && lc.tls != nil:
		// https only, with the AMQP listener's certificate.
		conf += fmt.Sprintf("management.ssl.ip = 127.0.0.1\nmanagement.ssl.port = %d\nmanagement.ssl.cacertfile = %s\nmanagement.ssl.certfile = %s\nmanagement.ssl.keyfile = %s\n",
			mgmtPort, lc.tls.CA, lc.tls.Cert, lc.tls.Key)
	case lc.management:
		// On loopback only, on a port of its own.
		conf += fmt.Sprintf("management.tcp.ip = 127.0.0.1\nmanagement.tcp.port = %d\n", mgmtPort)
	}
	plugins := "[rabbitmq_stream].\n"
	if lc.management {
		plugins = "[rabbitmq_stream,rabbitmq_management].\n"
	}
	files := map[string]string{
		"rabbitmq.conf":     conf,
		"advanced.config":   preciseTimeout,
		"enabled_plugins":   plugins,
		"rabbitmq-env.conf": "",
		".erlang.cookie":    "TCK" + strings.ToUpper(nonce()+nonce()),
	}
	for _, d := range []string{"mnesia", "log", "plugins-expand"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return err
		}
	}
	for name, body := range files {
		mode := os.FileMode(0o600)
		p := filepath.Join(dir, name)
		if name == ".erlang.cookie" {
			// Erlang refuses a cookie others can read; a second write
			// (a retried start) must replace a read-only file.
			mode = 0o400
			_ = os.Remove(p)
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			return err
		}
	}
	return nil
}

// ready is nil once the node accepts an AMQP connection and a channel.
func (l *local) ready(ctx context.Context) error {
	conn, err := dial(ctx, l.url, l.client)
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if err := ch.Close(); err != nil {
		return err
	}
	if l.mgmtURL == "" {
		return nil
	}
	// The management listener comes up with its plugin, after AMQP: any
	// HTTP answer (401 without a login) means it is up.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.mgmtURL+"/api/overview", nil)
	if err != nil {
		return err
	}
	hc := http.DefaultClient
	if l.client != nil {
		hc = &http.Client{Transport: &http.Transport{TLSClientConfig: l.client.Clone()}}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("management API: %w", err)
	}
	return resp.Body.Close()
}

// restart stops the node (SIGTERM: the VM shuts rabbit down cleanly) or
// kills it (SIGKILL), starts it again on the same folders, node name and
// ports, and waits until it answers.
// bootWait bounds one boot of the node, until it answers on AMQP.
const bootWait = 150 * time.Second

func (l *local) restart(ctx context.Context, abrupt bool) error {
	if !abrupt {
		if err := l.proc.Terminate(30 * time.Second); err != nil {
			return err
		}
	}
	if err := l.proc.Restart(ctx); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, bootWait)
	defer cancel()
	if err := l.proc.WaitReady(wctx, l.ready); err != nil {
		return err
	}
	l.awaitQueues(ctx)
	return nil
}

// awaitQueues waits, a bounded while, until every queue the kit declared
// before the restart is back: the node opens its AMQP listener while it
// still recovers its queues (some 200 ms), and a queue asked for in
// between is "not found". One still missing after the wait is left to
// the rule to find missing.
func (l *local) awaitQueues(ctx context.Context) {
	deadline := time.Now().Add(30 * time.Second)
	for _, q := range l.queues.list() {
		for time.Now().Before(deadline) && ctx.Err() == nil {
			if l.queueBack(ctx, q) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// queueBack reports whether a passive declare of q succeeds.
func (l *local) queueBack(ctx context.Context, q string) bool {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := dial(cctx, l.url, l.client)
	if err != nil {
		return false
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return false
	}
	_, err = ch.QueueDeclarePassive(q, true, false, false, false, nil)
	return err == nil
}

// stop ends the node, then its epmd, and removes the folder, once.
func (l *local) stop() error {
	l.stopMu.Do(func() {
		l.err = errors.Join(l.proc.Stop(10*time.Second), l.epmd.Stop(time.Second), l.rmDir())
	})
	return l.err
}

// OwnServer is a rabbitmq-server of a rule's own, which the rule may
// restart.
type OwnServer struct {
	l      *local
	client Client
}

// Open opens a handle on the rule's own server; the server learns the
// queues it declares.
func (s *OwnServer) Open(ctx context.Context) (mq.Broker, error) {
	opts := s.client.Options
	opts.StreamURL = s.l.streamURL
	b, err := Connect(ctx, s.l.url, opts)
	if err != nil {
		return nil, err
	}
	b.queues = &s.l.queues
	if s.client.Wrap == nil {
		return b, nil
	}
	return s.client.Wrap(b), nil
}

// Restart restarts the server gracefully, or abruptly (SIGKILL), on the
// same folders and ports, and waits until it answers.
func (s *OwnServer) Restart(ctx context.Context, abrupt bool) error { return s.l.restart(ctx, abrupt) }

// Sync names how the server keeps what it confirmed.
func (s *OwnServer) Sync(context.Context) (string, bool, error) {
	return syncSetting, true, nil
}

// syncSetting is how a RabbitMQ node keeps a confirmed publish to a topic
// of the kit's.
const syncSetting = "quorum queue: Raft log fsynced before the publisher confirm; stream (the log the kit reads back): written before the confirm, fsynced only as the OS decides (RabbitMQ streams rely on replication, and this node has none)"

// Stop stops the server and removes its folder.
func (s *OwnServer) Stop() error { return s.l.stop() }

// Tail is the end of the server's output (for a failing test).
func (s *OwnServer) Tail(n int) string { return s.l.proc.Tail(n) }
