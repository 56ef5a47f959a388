package nats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceproof/tck/mq"
)

// Inspector reads streams, consumers and the server's settings through
// JetStream's info requests (STREAM.INFO, CONSUMER.INFO, account info) on a
// connection of its own. It never creates, updates or deletes anything:
// this is how the kit reads a team's own streams, which it may only read.
type Inspector struct {
	nc *natsgo.Conn
	js jetstream.JetStream
	// Monitoring is the server's HTTP monitoring endpoint
	// (http://HOST:8222, a profile's nats.monitoringUrl): Server reads the
	// sync settings from its /varz where the system account's VARZ does
	// not answer. Empty: not given.
	Monitoring string
}

var _ mq.Inspector = (*Inspector)(nil)

// Inspect connects an Inspector to the server at url.
func Inspect(ctx context.Context, url string, opts Options) (*Inspector, error) {
	opts = opts.withDefaults()
	opts.Name += "-inspect"
	nc, err := dial(url, opts)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return &Inspector{nc: nc, js: js}, nil
}

// Topic reads the stream called name.
func (in *Inspector) Topic(ctx context.Context, name string) (mq.TopicInfo, error) {
	s, err := in.js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return mq.TopicInfo{}, fmt.Errorf("stream %s: %w", name, mq.ErrNotFound)
	}
	if err != nil {
		return mq.TopicInfo{}, fmt.Errorf("stream %s info: %w", name, err)
	}
	c := s.CachedInfo().Config
	settings, err := rawSettings(ctx, in.nc, "$JS.API.STREAM.INFO."+name)
	if err != nil {
		return mq.TopicInfo{}, fmt.Errorf("stream %s configuration: %w", name, err)
	}
	// The server leaves allow_atomic out when false (omitempty in
	// server/stream.go StreamConfig), and a server before 2.12 has none:
	// either way the stream takes no atomic batch.
	if _, ok := settings["allow_atomic"]; !ok {
		settings["allow_atomic"] = "false"
	}
	return mq.TopicInfo{
		Name:     c.Name,
		Subjects: c.Subjects,
		Settings: settings,
		Config: mq.TopicConfig{
			DedupeWindow: c.Duplicates,
			Retention:    retention(c.Retention),
			Replicas:     c.Replicas,
			MaxAge:       c.MaxAge,
			Storage:      storageOf(c.Storage),
		},
	}, nil
}

// Consumer reads the durable consumer called name on stream topic.
func (in *Inspector) Consumer(ctx context.Context, topic, name string) (mq.ConsumerInfo, error) {
	c, err := in.js.Consumer(ctx, topic, name)
	if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return mq.ConsumerInfo{}, fmt.Errorf("consumer %s on stream %s: %w", name, topic, mq.ErrNotFound)
	}
	if err != nil {
		return mq.ConsumerInfo{}, fmt.Errorf("consumer %s on stream %s info: %w", name, topic, err)
	}
	cc := c.CachedInfo().Config
	settings, err := rawSettings(ctx, in.nc, "$JS.API.CONSUMER.INFO."+topic+"."+name)
	if err != nil {
		return mq.ConsumerInfo{}, fmt.Errorf("consumer %s on stream %s configuration: %w", name, topic, err)
	}
	return mq.ConsumerInfo{
		Settings:  settings,
		Config:    mq.ConsumerConfig{Group: cc.Durable, AckWait: cc.AckWait, MaxDeliver: cc.MaxDeliver, Backoff: cc.BackOff},
		AckPolicy: ackPolicy(cc.AckPolicy),
	}, nil
}

// NotReadable is how a setting a client connection cannot read is shown.
const NotReadable = "not readable by a client"

// Server reads what a client connection can about the server: the version
// and name from its INFO line, the account's JetStream limits, and the
// sync and store settings from the system account's VARZ request, which
// answers only a connection of the system account. Everything it cannot
// read says so and why.
func (in *Inspector) Server(ctx context.Context) (mq.ServerInfo, error) {
	si := mq.ServerInfo{Version: "nats-server " + in.nc.ConnectedServerVersion(), Settings: map[string]string{
		"server name": in.nc.ConnectedServerName(),
	}}
	if c := in.nc.ConnectedClusterName(); c != "" {
		si.Settings["cluster"] = c
	}
	if ai, err := in.js.AccountInfo(ctx); err == nil {
		si.Settings["account JetStream limits"] = fmt.Sprintf("max memory %s, max storage %s, max streams %s, max consumers %s (account info)",
			limit(ai.Limits.MaxMemory), limit(ai.Limits.MaxStore), limit(int64(ai.Limits.MaxStreams)), limit(int64(ai.Limits.MaxConsumers)))
		if ai.Domain != "" {
			si.Settings["JetStream domain"] = ai.Domain
		}
	} else {
		si.Settings["account JetStream limits"] = "not read: " + err.Error()
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	msg, err := in.nc.RequestWithContext(rctx, "$SYS.REQ.SERVER.PING.VARZ", nil)
	var v struct {
		Data struct {
			JetStream struct {
				Config *struct {
					StoreDir     string        `json:"store_dir"`
					SyncInterval time.Duration `json:"sync_interval"`
					SyncAlways   bool          `json:"sync_always"`
				} `json:"config"`
			} `json:"jetstream"`
		} `json:"data"`
	}
	if err == nil {
		err = json.Unmarshal(msg.Data, &v)
	}
	if err == nil && v.Data.JetStream.Config == nil {
		err = errors.New("the VARZ answer has no JetStream configuration")
	}
	if err != nil {
		why := fmt.Sprintf("%s (the server's jetstream sync_interval and store_dir are in its configuration file and on its monitoring endpoint /varz; a client reads them only as the system account, and $SYS.REQ.SERVER.PING.VARZ said: %v; a profile's brokers[].nats.monitoringUrl lets the kit read /varz)", NotReadable, err)
		short := NotReadable + ": only the system account's VARZ or the monitoring endpoint /varz tells it; give the profile's brokers[].nats.monitoringUrl"
		if in.Monitoring != "" {
			// The monitoring endpoint tells what the client may not.
			mc, merr := MonitoringVarz(ctx, in.Monitoring)
			if merr == nil {
				setSync(si.Settings, mc.Sync(), mc.StoreDir, "monitoring /varz")
				return si, nil
			}
			why = fmt.Sprintf("%s (the system account's VARZ did not answer: %v; the monitoring endpoint: %v)", NotReadable, err, merr)
			short = fmt.Sprintf("%s: the monitoring endpoint did not answer (%v)", NotReadable, merr)
		}
		si.Settings["sync"] = why
		si.Settings["sync_interval"] = short
		si.Settings["sync_always"] = short
		si.Settings["store dir"] = NotReadable
		return si, nil
	}
	c := v.Data.JetStream.Config
	setSync(si.Settings, Sync{Interval: c.SyncInterval, Always: c.SyncAlways}, c.StoreDir, "system account VARZ")
	return si, nil
}

// setSync records the sync settings read from where: the phrase, and
// sync_interval and sync_always by the server's names for BR-6.1.
func setSync(m map[string]string, s Sync, storeDir, where string) {
	m["sync"] = syncString(s) + " (" + where + ")"
	m["store dir"] = storeDir + " (" + where + ")"
	if s.Interval == 0 {
		s.Interval = DefaultSyncInterval // what the server runs with unset
	}
	m["sync_interval"] = s.Interval.String()
	m["sync_always"] = fmt.Sprint(s.Always)
}

// DefaultSyncInterval is JetStream's sync_interval when none is set
// (server/filestore.go defaultSyncInterval).
const DefaultSyncInterval = 2 * time.Minute

// VarzJetStream is the JetStream configuration a server's /varz shows
// (server/jetstream.go JetStreamConfig: sync_interval in nanoseconds,
// sync_always left out when false).
type VarzJetStream struct {
	StoreDir     string        `json:"store_dir"`
	SyncInterval time.Duration `json:"sync_interval"`
	SyncAlways   bool          `json:"sync_always"`
}

// Sync is the configuration's sync setting.
func (v VarzJetStream) Sync() Sync { return Sync{Interval: v.SyncInterval, Always: v.SyncAlways} }

// MonitoringVarz reads jetstream.config from GET base/varz, the server's
// HTTP monitoring endpoint. Its errors name the endpoint without any
// password the URL carries.
func MonitoringVarz(ctx context.Context, base string) (VarzJetStream, error) {
	u, err := url.Parse(strings.TrimSuffix(base, "/") + "/varz")
	if err != nil {
		return VarzJetStream{}, errors.New("the monitoring URL does not parse")
	}
	shown := u.Redacted()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return VarzJetStream{}, fmt.Errorf("GET %s: the request cannot be made", shown)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the URL
		}
		return VarzJetStream{}, fmt.Errorf("GET %s: %v", shown, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return VarzJetStream{}, fmt.Errorf("GET %s: %s", shown, resp.Status)
	}
	var v struct {
		JetStream struct {
			Config *VarzJetStream `json:"config"`
		} `json:"jetstream"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&v); err != nil {
		return VarzJetStream{}, fmt.Errorf("GET %s: not a /varz answer: %v", shown, err)
	}
	if v.JetStream.Config == nil {
		return VarzJetStream{}, fmt.Errorf("GET %s: no jetstream.config (JetStream is not enabled on that server)", shown)
	}
	return *v.JetStream.Config, nil
}

// Close closes the Inspector's connection.
func (in *Inspector) Close() error {
	in.nc.Close()
	return nil
}

func limit(n int64) string {
	if n < 0 {
		return "unlimited"
	}
	return fmt.Sprint(n)
}

func retention(r jetstream.RetentionPolicy) mq.Retention {
	switch r {
	case jetstream.WorkQueuePolicy:
		return mq.WorkQueue
	case jetstream.InterestPolicy:
		return mq.Interest
	}
	return mq.Limits
}

func storageOf(s jetstream.StorageType) mq.Storage {
	if s == jetstream.MemoryStorage {
		return mq.MemoryStorage
	}
	return mq.FileStorage
}

func ackPolicy(p jetstream.AckPolicy) mq.AckPolicy {
	switch p {
	case jetstream.AckNonePolicy:
		return mq.AckNone
	case jetstream.AckAllPolicy:
		return mq.AckAll
	}
	return mq.AckExplicit
}
