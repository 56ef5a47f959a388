package redis

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/onceproof/tck/internal/options"
	"github.com/onceproof/tck/mq"
)

// This file is the broker/redis target as the kit starts it: a server at a
// URL or in a container, what the kit found it can do (Probe), and the
// client the kit reaches it with. The registry binds a Target to the broker
// suite; nothing here knows the CLI.

// Client is how the kit's handles talk to a server: the adapter's options
// and, for a mutant, the defect wrapped around every handle.
type Client struct {
	Options Options
	Wrap    func(*Broker) mq.Broker
	// Declare adjusts what the target declares (a mutant that claims what
	// it does not have).
	Declare func(mq.Capabilities) mq.Capabilities
}

// Open opens a handle on the server at url.
func (c Client) Open(ctx context.Context, url string) (mq.Broker, error) {
	b, err := Connect(ctx, url, c.Options)
	if err != nil {
		return nil, err
	}
	if c.Wrap == nil {
		return b, nil
	}
	return c.Wrap(b), nil
}

// Target is a Redis server the kit checks, opened by Open or started by
// Run or RunLocal.
type Target struct {
	mq.Info
	Client Client
	// Private, when set, starts a server of a rule's own that the rule may
	// restart (nil: the kit cannot restart this server).
	Private func(ctx context.Context) (*OwnServer, error)
	Stop    func() error
}

// Option says how Open, Run and RunLocal reach the server.
type Option func(*settings)

type settings struct{ client Client }

// WithClient sets how the kit's handles talk to the server: the adapter's
// options and, for a mutant, the defect wrapped around every handle.
func WithClient(c Client) Option { return func(s *settings) { s.client = c } }

// WithTLS sets the client's TLS configuration (docs/tls.md), after any
// WithClient.
func WithTLS(cfg *tls.Config) Option { return func(s *settings) { s.client.Options.TLS = cfg } }

// Server is what Probe found.
type Server struct {
	Version string            // "redis_version" of INFO server
	Config  map[string]string // appendonly, appendfsync, maxmemory-policy, where CONFIG GET is allowed
	IDMP    bool              // XADD IDMP answered
	NoIDMP  string            // why not: the server's answer to XADD IDMP
	Notes   []string          // what could not be read, and durability hazards
}

// Probe checks that the server at url answers and lets the kit do what the
// suite does, on a scratch key of the run (removed afterwards): the stream
// commands (a server without them, Redis before 6.2, is refused), the ACL
// on the kit's keys (a command the ACL forbids is refused, named), and
// whether XADD has IDMP, by sending one, never from the version string.
// Errors never carry the password.
func Probe(ctx context.Context, url, run string, tlsCfg *tls.Config) (*Server, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rdb, err := dial(ctx, url, tlsCfg)
	if err != nil {
		return nil, err
	}
	defer rdb.Close()
	s := &Server{Config: map[string]string{}}
	if info, err := rdb.Info(ctx, "server").Result(); err == nil {
		s.Version = infoField(info, "redis_version")
	} else {
		s.Notes = append(s.Notes, "INFO server not allowed: "+scrub(err.Error(), url))
	}
	for _, p := range []string{"appendonly", "appendfsync", "maxmemory-policy"} {
		v, err := rdb.ConfigGet(ctx, p).Result()
		if err != nil {
			s.Notes = append(s.Notes, fmt.Sprintf("CONFIG GET %s not allowed: %s", p, scrub(err.Error(), url)))
			continue
		}
		if x, ok := v[p]; ok {
			s.Config[p] = x
		}
	}
	s.Notes = append(s.Notes, durabilityHazards(s.Config)...)

	key := KeyPrefix + run + ":probe-" + nonce()
	defer func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer dcancel()
		_ = rdb.Del(dctx, key).Err()
	}()
	group, member := "probe", "probe-member"
	steps := []struct {
		cmd string
		do  func() error
	}{
		{"XADD", func() error { return rdb.XAdd(ctx, &goredis.XAddArgs{Stream: key, Values: []any{"probe", "1"}}).Err() }},
		{"XGROUP CREATE", func() error { return rdb.XGroupCreateMkStream(ctx, key, group, "0").Err() }},
		{"XREADGROUP", func() error {
			return rdb.XReadGroup(ctx, &goredis.XReadGroupArgs{Group: group, Consumer: member, Streams: []string{key, ">"}, Count: 1, Block: -1}).Err()
		}},
		{"XAUTOCLAIM", func() error {
			return rdb.XAutoClaim(ctx, &goredis.XAutoClaimArgs{Stream: key, Group: group, Consumer: member, Start: "0-0", Count: 1}).Err()
		}},
		{"XPENDING", func() error {
			return rdb.XPendingExt(ctx, &goredis.XPendingExtArgs{Stream: key, Group: group, Start: "-", End: "+", Count: 1}).Err()
		}},
		{"XCLAIM (through EVAL, for in-progress)", func() error {
			return inProgress.Run(ctx, rdb, []string{key}, group, member, "0-1").Err()
		}},
		{"XACK", func() error { return rdb.XAck(ctx, key, group, "0-1").Err() }},
		{"XRANGE", func() error { return rdb.XRange(ctx, key, "-", "+").Err() }},
		{"XTRIM", func() error { return rdb.XTrimMaxLen(ctx, key, 1).Err() }},
		{"XDEL", func() error { return rdb.XDel(ctx, key, "0-1").Err() }},
		{"DEL", func() error { return rdb.Del(ctx, key+"-del").Err() }},
	}
	for _, st := range steps {
		if err := st.do(); err != nil && !errors.Is(err, goredis.Nil) {
			return nil, refused(st.cmd, key, url, err)
		}
	}
	// IDMP: an XADD with it on the scratch key. A server without it answers
	// with a syntax error (it reads IDMP as an entry id).
	err = rdb.XAdd(ctx, &goredis.XAddArgs{Stream: key, ProducerID: producerID, IdempotentID: "probe", Values: []any{"probe", "2"}}).Err()
	switch {
	case err == nil:
		s.IDMP = true
	case isPerm(err):
		return nil, refused("XADD IDMP", key, url, err)
	default:
		s.NoIDMP = scrub(err.Error(), url)
	}
	return s, nil
}

// refused is the error of a probe step the server would not do.
func refused(cmd, key, url string, err error) error {
	msg := scrub(err.Error(), url)
	switch {
	case strings.Contains(strings.ToLower(msg), "unknown command"):
		return fmt.Errorf("the server has no %s (Redis Streams consumer groups with XAUTOCLAIM need Redis 6.2 or later): %s", cmd, msg)
	case isPerm(err):
		return fmt.Errorf("the server's ACL forbids %s on the kit's keys (%s*): %s", cmd, KeyPrefix, msg)
	}
	return fmt.Errorf("%s on the scratch key %s failed: %s", cmd, key, msg)
}

func isPerm(err error) bool { return strings.HasPrefix(err.Error(), "NOPERM") }

// durabilityHazards names the settings under which an acknowledged XADD can
// be lost.
func durabilityHazards(cfg map[string]string) []string {
	var out []string
	switch {
	case cfg["appendonly"] == "no":
		out = append(out, "hazard: appendonly no: an acknowledged XADD lives only in memory until the next RDB snapshot; a crash or restart loses it")
	case cfg["appendfsync"] == "everysec":
		out = append(out, "hazard: appendfsync everysec: up to about a second of acknowledged XADDs can be lost on a crash or power loss")
	case cfg["appendfsync"] == "no":
		out = append(out, "hazard: appendfsync no: the operating system decides when acknowledged XADDs reach the disk; a power loss can lose them")
	}
	if p := cfg["maxmemory-policy"]; p != "" && p != "noeviction" {
		out = append(out, "hazard: maxmemory-policy "+p+": under memory pressure the server may evict a whole stream key, acknowledged entries and pending lists with it")
	}
	return out
}

// durability spells the server's persistence settings and what they risk.
func durability(s *Server) string {
	if s.Config["appendonly"] == "" {
		return "not readable (CONFIG GET not allowed)"
	}
	d := fmt.Sprintf("appendonly %s, appendfsync %s", s.Config["appendonly"], s.Config["appendfsync"])
	if hz := durabilityHazards(s.Config); len(hz) > 0 {
		d += " (" + strings.Join(hz, "; ") + ")"
	}
	return d
}

// CanLoseAcked reports whether the settings can lose an acknowledged write.
func CanLoseAcked(cfg map[string]string) bool {
	return cfg["appendonly"] != "yes" || cfg["appendfsync"] != "always"
}

// infoField reads one "name:value" line of an INFO reply.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// Open binds the kit to the redis-server at url, after Probe. The kit
// cannot restart a server it did not start.
func Open(ctx context.Context, url string, opts ...Option) (*Target, error) {
	return newTarget(ctx, url, options.Apply(opts).client, nil)
}

// newTarget probes the server at url and declares what it found.
func newTarget(ctx context.Context, url string, client Client, stop func() error) (*Target, error) {
	run := client.Options.Run
	if run == "" {
		run = NewRun()
		client.Options.Run = run
	}
	s, err := Probe(ctx, url, run, client.Options.TLS)
	if err != nil {
		return nil, err
	}
	client.Options.IDMP = s.IDMP
	caps := capabilities(client.Options)
	if client.Declare != nil {
		caps = client.Declare(caps)
	}
	if stop == nil {
		stop = func() error { return nil }
	}
	cfg := map[string]string{
		"keyPrefix":  KeyPrefix + run + ":",
		"idmp":       fmt.Sprint(s.IDMP),
		"ackWait":    "XAUTOCLAIM min-idle-time",
		"inProgress": "XCLAIM JUSTID, min-idle 0, while the member holds the entry",
	}
	srv := map[string]string{}
	if s.Version != "" {
		srv["version"] = s.Version + " (INFO server)"
	}
	for k, v := range s.Config {
		srv[k] = v + " (CONFIG GET)"
	}
	t := &Target{
		Info: mq.Info{URL: url, Version: "redis-server " + s.Version, Caps: caps, Config: cfg, Server: srv,
			Notes: s.Notes, Lacks: lacks(s)},
		Client: client, Stop: stop,
	}
	if s.Version == "" {
		t.Version = "redis-server (version not readable)"
	}
	return t, nil
}

// lacks is why the server does not have each capability it lacks.
func lacks(s *Server) map[string]string {
	l := map[string]string{
		"nak-delay":          "Redis Streams has no negative acknowledgement: an unacknowledged entry comes back only when a consumer claims it after its idle time (XAUTOCLAIM)",
		"term":               "Redis Streams has no terminate: an entry stays claimable until XACK or XDEL removes it",
		"max-deliver":        "Redis Streams has no max-deliver: the delivery counter (XPENDING) grows without a limit the server enforces",
		"producer-sessions":  "Redis has no idempotent producer session: a retried XADD is a new entry unless it carries IDMP",
		"lost-produce-reply": "Redis has no idempotent producer session whose retries a lost reply would test",
		"group-offsets":      "a Redis consumer group's progress is its last-delivered id and its pending list (BR-4.x), not a committed offset",
		"inspect":            "BR-6.1 reads a team's own stream keys, groups and persistence settings only when a profile declares them and the target is the team's server (tck run --profile FILE --target broker/redis=redis://...): a stream key the kit creates holds no setting of the team's to compare",
	}
	l["broker-restart"] = "the kit cannot restart a Redis server it did not start; its durability settings as read: " + durability(s)
	if !s.IDMP {
		l["dedupe-window"] = "this Redis server has no producer de-dupe: XADD IDMP (Redis 8.6 and later) was refused (" + s.NoIDMP + ")"
	}
	return l
}
