package rabbitmq

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/onceproof/tck/mq"
)

// This file reads a team's queues and node read-only, for BR-6.1: the
// management HTTP API (GET only) where the server has it, else a passive
// queue.declare over AMQP, which finds a queue but tells none of its
// arguments. Nothing is declared, bound, published or deleted.

// ManagementParam is the query parameter of a broker/rabbitmq address that
// names the management API (amqp://u:p@host:5672/?management=http://host:15672);
// without it the kit tries http://HOST:15672 (https://HOST:15671 for an
// amqps:// address) with the same login.
const ManagementParam = "management"

// DefaultManagementPort is the management plugin's HTTP port.
const DefaultManagementPort = 15672

// DefaultManagementTLSPort is the management plugin's conventional HTTPS
// port (management.ssl.port), tried for an amqps:// address.
const DefaultManagementTLSPort = 15671

// SplitManagement takes the management parameter off an AMQP address: the
// address to dial, and the management API's base URL ("" when not named).
func SplitManagement(addr string) (string, string) {
	i := strings.IndexByte(addr, '?')
	if i < 0 {
		return addr, ""
	}
	q, err := url.ParseQuery(addr[i+1:])
	if err != nil || q.Get(ManagementParam) == "" {
		return addr, ""
	}
	m := q.Get(ManagementParam)
	q.Del(ManagementParam)
	rest := addr[:i]
	if enc := q.Encode(); enc != "" {
		rest += "?" + enc
	}
	return rest, strings.TrimRight(m, "/")
}

// QueueSettings are the queue settings the Inspector reports, by
// RabbitMQ's argument names: each the effective value, from the queue's
// argument or the policy in effect (numeric limits: the smaller of the
// two; the others: the argument), "" when neither sets it.
var QueueSettings = []string{"x-queue-type", "x-delivery-limit", "x-dead-letter-exchange", "x-dead-letter-strategy",
	"x-message-ttl", "x-max-length", "x-overflow", "x-expires", "policy"}

// numeric are the settings where the smaller of argument and policy
// applies (RabbitMQ's ttl, maxlength and quorum-queues pages).
var numeric = map[string]bool{"x-delivery-limit": true, "x-message-ttl": true, "x-max-length": true, "x-expires": true}

// Inspector reads queues and the node's settings without changing them.
type Inspector struct {
	amqpURL string
	mgmt    string // the management API's base URL; "" when it did not answer
	mgmtWhy string // why there is no management API
	user    string
	pass    string
	vhost   string
	tls     *tls.Config // the run's material, for amqps:// and an https management API
	// ConsumerTimeout is the node's consumer_timeout where the kit set it
	// (a server of its own): RabbitMQ does not report it (neither AMQP nor
	// the management API before 4.x tell), so elsewhere it is unreadable.
	consumerTimeout time.Duration
	run             string // the kit's run: its scratch topics' queues
	hc              *http.Client
	version         string
}

var _ mq.Inspector = (*Inspector)(nil)

// Inspect opens a read-only view of the server at amqpURL: the management
// API at mgmt (when "": http://HOST:15672, or https://HOST:15671 for an
// amqps:// address), with the AMQP login and opts.TLS; when it does not
// answer, passive declares over AMQP only.
func Inspect(ctx context.Context, amqpURL, mgmt string, opts Options) (*Inspector, error) {
	u, err := amqp.ParseURI(amqpURL)
	if err != nil {
		return nil, fmt.Errorf("not a RabbitMQ URL (want amqp://user:password@host:port/vhost): %s", scrub(err.Error(), amqpURL))
	}
	in := &Inspector{amqpURL: amqpURL, user: u.Username, pass: u.Password, vhost: u.Vhost, consumerTimeout: opts.ConsumerTimeout,
		run: opts.Run, hc: &http.Client{Timeout: 10 * time.Second}, tls: opts.TLS}
	if opts.TLS != nil {
		// An https management API is verified with the same material.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = opts.TLS.Clone()
		in.hc.Transport = tr
	}
	if in.vhost == "" {
		in.vhost = "/"
	}
	if mgmt == "" {
		mgmt = fmt.Sprintf("http://%s", net.JoinHostPort(u.Host, strconv.Itoa(DefaultManagementPort)))
		if u.Scheme == "amqps" {
			// A server that wants TLS on AMQP likely wants it on its
			// management API too: the plugin's TLS port.
			mgmt = fmt.Sprintf("https://%s", net.JoinHostPort(u.Host, strconv.Itoa(DefaultManagementTLSPort)))
		}
	}
	var ov struct {
		Version string `json:"rabbitmq_version"`
	}
	if err := in.get(ctx, mgmt, "/api/overview", &ov); err != nil {
		in.mgmtWhy = fmt.Sprintf("the management API at %s did not answer (%s)", mgmt, oneLine(err.Error()))
	} else {
		in.mgmt, in.version = mgmt, ov.Version
	}
	// The AMQP login must work either way: a passive declare is the
	// fallback, and the version comes from connection.start.
	conn, err := dial(ctx, amqpURL, in.tls)
	if err != nil {
		return nil, err
	}
	if in.version == "" {
		in.version, _ = conn.Properties["version"].(string)
	}
	_ = conn.Close()
	return in, nil
}

func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// errNotFound is a 404 of the management API.
var errNotFound = errors.New("not found")

// get reads path of the management API at base into v (GET only).
func (in *Inspector) get(ctx context.Context, base, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return err
	}
	req.SetBasicAuth(in.user, in.pass)
	resp, err := in.hc.Do(req)
	if err != nil {
		return errors.New(strings.ReplaceAll(err.Error(), in.pass, "xxxxx"))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return errNotFound
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("HTTP %d: the login %q may not read %s (the management tag monitoring or management is needed)", resp.StatusCode, in.user, path)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("HTTP %d reading %s", resp.StatusCode, path)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

// mgmtQueue is what GET /api/queues/VHOST/NAME answers that the kit reads.
type mgmtQueue struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Durable    bool           `json:"durable"`
	Arguments  map[string]any `json:"arguments"`
	Policy     any            `json:"policy"`
	OpPolicy   any            `json:"operator_policy"`
	Effective  map[string]any `json:"effective_policy_definition"`
	Messages   *int64         `json:"messages"`
	Consumers  *int64         `json:"consumers"`
	IdleSince  string         `json:"idle_since"`
	AutoDelete bool           `json:"auto_delete"`
}

// text is a JSON value as RabbitMQ prints it: numbers whole.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Effective is a queue's effective settings by RabbitMQ's argument names
// from its type, arguments and the policy definition in effect, and where
// each came from. Exported for the unit test of the precedence.
func Effective(qtype string, args, policy map[string]any, policyName string) (map[string]string, map[string]string) {
	set, from := map[string]string{"x-queue-type": qtype, "policy": policyName}, map[string]string{"x-queue-type": "type", "policy": "policy"}
	for _, k := range QueueSettings {
		if k == "x-queue-type" || k == "policy" {
			continue
		}
		a, pv := text(args[k]), text(policy[strings.TrimPrefix(k, "x-")])
		switch {
		case a != "" && pv != "" && numeric[k]:
			an, _ := strconv.ParseInt(a, 10, 64)
			pn, _ := strconv.ParseInt(pv, 10, 64)
			set[k], from[k] = a, "argument (smaller than policy "+policyName+"'s "+pv+")"
			if pn < an {
				set[k], from[k] = pv, "policy "+policyName+" (smaller than the argument "+a+")"
			}
		case a != "":
			set[k], from[k] = a, "argument"
		case pv != "":
			set[k], from[k] = pv, "policy "+policyName
		default:
			set[k] = ""
		}
	}
	return set, from
}

// Topic reads the queue RabbitMQ calls name: its effective settings by
// argument name. A kit's scratch topic is found by the kit's names (its
// quorum queue and its stream log). Without the management API only the
// queue's existence is read, and every setting is "not readable".
func (in *Inspector) Topic(ctx context.Context, name string) (mq.TopicInfo, error) {
	if in.run != "" {
		if ti, ok, err := in.kitTopic(ctx, name); ok || err != nil {
			return ti, err
		}
	}
	if in.mgmt == "" {
		return in.passive(ctx, name)
	}
	var q mgmtQueue
	if err := in.get(ctx, in.mgmt, "/api/queues/"+url.PathEscape(in.vhost)+"/"+url.PathEscape(name), &q); err != nil {
		if errors.Is(err, errNotFound) {
			return mq.TopicInfo{}, fmt.Errorf("queue %s: %w", name, mq.ErrNotFound)
		}
		return mq.TopicInfo{}, fmt.Errorf("the management API's queue %s: %w", name, err)
	}
	pol := text(q.Policy)
	set, from := Effective(q.Type, q.Arguments, q.Effective, pol)
	in.fillDefaults(set)
	var srcs []string
	for _, k := range QueueSettings {
		if f := from[k]; f != "" && set[k] != "" && k != "x-queue-type" && k != "policy" {
			srcs = append(srcs, k+" from "+f)
		}
	}
	sort.Strings(srcs)
	set["read from"] = "the management API (GET /api/queues)"
	if len(srcs) > 0 {
		set["read from"] += "; " + strings.Join(srcs, "; ")
	}
	if op := text(q.OpPolicy); op != "" {
		set["operator policy"] = op
	}
	if q.Messages != nil {
		set["messages"] = strconv.FormatInt(*q.Messages, 10)
	}
	return mq.TopicInfo{Name: name, Settings: set, Config: mq.TopicConfig{Retention: mq.Limits}}, nil
}

// fillDefaults puts RabbitMQ's default where nothing sets a setting and
// the default is a value: overflow drop-head, a quorum queue's
// dead-letter strategy at-most-once and, from 4.0, delivery limit 20.
func (in *Inspector) fillDefaults(set map[string]string) {
	if set["x-queue-type"] == "stream" {
		delete(set, "x-overflow")
		delete(set, "x-dead-letter-strategy")
		delete(set, "x-delivery-limit")
		return
	}
	if set["x-overflow"] == "" {
		set["x-overflow"] = "drop-head"
	}
	if set["x-queue-type"] != "quorum" {
		delete(set, "x-dead-letter-strategy")
		delete(set, "x-delivery-limit")
		return
	}
	if set["x-dead-letter-strategy"] == "" {
		set["x-dead-letter-strategy"] = "at-most-once"
	}
	if set["x-delivery-limit"] == "" && majorOf(in.version) >= 4 {
		set["x-delivery-limit"] = "20"
	}
}

func majorOf(v string) int {
	n, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	return n
}

// passive finds a queue with queue.declare passive: it exists or not.
func (in *Inspector) passive(ctx context.Context, name string) (mq.TopicInfo, error) {
	conn, err := dial(ctx, in.amqpURL, in.tls)
	if err != nil {
		return mq.TopicInfo{}, err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return mq.TopicInfo{}, err
	}
	q, err := ch.QueueDeclarePassive(name, true, false, false, false, nil)
	if err != nil {
		var ae *amqp.Error
		if errors.As(err, &ae) && ae.Code == amqp.NotFound {
			return mq.TopicInfo{}, fmt.Errorf("queue %s: %w", name, mq.ErrNotFound)
		}
		return mq.TopicInfo{}, fmt.Errorf("passive queue.declare %s: %s", name, scrub(err.Error(), in.amqpURL))
	}
	_ = ch.Close()
	set := map[string]string{"messages": strconv.Itoa(q.Messages), "read from": "a passive queue.declare over AMQP (it tells a queue's message and consumer counts, none of its arguments)"}
	for _, k := range QueueSettings {
		set[k] = "not readable: " + in.mgmtWhy + "; AMQP does not tell a queue's arguments or policy (enable the management plugin, or name it with ?management=http://HOST:PORT)"
	}
	return mq.TopicInfo{Name: name, Settings: set, Config: mq.TopicConfig{Retention: mq.Limits}}, nil
}

// kitTopic reads a scratch topic of the kit's run: its quorum queue and
// its stream log's max age. ok is false when name is not one.
func (in *Inspector) kitTopic(ctx context.Context, name string) (mq.TopicInfo, bool, error) {
	x := NamePrefix + in.run + "." + name
	if in.mgmt == "" {
		return mq.TopicInfo{}, false, nil
	}
	var q, log mgmtQueue
	if err := in.get(ctx, in.mgmt, "/api/queues/"+url.PathEscape(in.vhost)+"/"+url.PathEscape(x+".q"), &q); err != nil {
		if errors.Is(err, errNotFound) {
			return mq.TopicInfo{}, false, nil
		}
		return mq.TopicInfo{}, true, err
	}
	if err := in.get(ctx, in.mgmt, "/api/queues/"+url.PathEscape(in.vhost)+"/"+url.PathEscape(x+".log"), &log); err != nil {
		return mq.TopicInfo{}, true, fmt.Errorf("the stream log of topic %s: %w", name, err)
	}
	// Quorum queues and streams are always on disk.
	cfg := mq.TopicConfig{Retention: mq.Limits, Storage: mq.FileStorage}
	if a := text(log.Arguments["x-max-age"]); a != "" {
		if d, err := time.ParseDuration(a); err == nil {
			cfg.MaxAge = d
		}
	}
	set, _ := Effective(q.Type, q.Arguments, q.Effective, text(q.Policy))
	set["read from"] = "the management API: the topic's quorum queue " + x + ".q and stream " + x + ".log"
	return mq.TopicInfo{Name: name, Config: cfg, Settings: set}, true, nil
}

// Consumer reads a kit's scratch group: its queue's delivery limit (max
// deliver = x-delivery-limit + 1) and the node's consumer_timeout where the
// kit set it. A team's application consumers are its clients' settings
// (prefetch, ack mode), not the server's: they are not read.
func (in *Inspector) Consumer(ctx context.Context, topic, name string) (mq.ConsumerInfo, error) {
	if in.mgmt == "" {
		return mq.ConsumerInfo{}, fmt.Errorf("group %s/%s: %s", topic, name, in.mgmtWhy)
	}
	qn := NamePrefix + in.run + "." + topic + ".g." + name
	var q mgmtQueue
	if err := in.get(ctx, in.mgmt, "/api/queues/"+url.PathEscape(in.vhost)+"/"+url.PathEscape(qn), &q); err != nil {
		if errors.Is(err, errNotFound) {
			return mq.ConsumerInfo{}, fmt.Errorf("group queue %s: %w", qn, mq.ErrNotFound)
		}
		return mq.ConsumerInfo{}, err
	}
	set, _ := Effective(q.Type, q.Arguments, q.Effective, text(q.Policy))
	cc := mq.ConsumerConfig{Group: name, AckWait: in.consumerTimeout}
	// The limit counts returns: limit N allows N+1 deliveries.
	if n, err := strconv.Atoi(set["x-delivery-limit"]); err == nil {
		cc.MaxDeliver = n + 1
	}
	set["read from"] = "the management API: the group's quorum queue " + qn
	if in.consumerTimeout > 0 {
		set["consumer_timeout"] = fmt.Sprintf("%d ms, as the kit set it in the node's rabbitmq.conf (RabbitMQ does not report it)", in.consumerTimeout.Milliseconds())
	}
	return mq.ConsumerInfo{Config: cc, Settings: set}, nil
}

// Server reads the version and, where it can, consumer_timeout.
func (in *Inspector) Server(ctx context.Context) (mq.ServerInfo, error) {
	si := mq.ServerInfo{Version: "RabbitMQ " + in.version, Settings: map[string]string{}}
	switch {
	case in.consumerTimeout > 0:
		si.Settings["consumer_timeout"] = strconv.FormatInt(in.consumerTimeout.Milliseconds(), 10)
	default:
		si.Settings["consumer_timeout"] = "not readable: RabbitMQ " + in.version + " reports consumer_timeout neither over AMQP nor through the management API (rabbitmqctl environment on the node shows it)"
	}
	if in.mgmt != "" {
		si.Settings["management API"] = in.mgmt
	} else {
		si.Settings["management API"] = in.mgmtWhy
	}
	return si, nil
}

// Close releases nothing held: every read opened and closed its own.
func (in *Inspector) Close() error { return nil }
