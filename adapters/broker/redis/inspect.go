package redis

import (
	"context"
	"crypto/tls"
	"fmt"
	"sort"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/onceproof/tck/mq"
)

// Inspector reads a team's stream keys, their groups and the server's
// persistence settings with read-only commands (XINFO STREAM, XINFO
// GROUPS, XINFO CONSUMERS, XPENDING's summary, CONFIG GET, INFO): it never
// writes, trims, acks or claims. Keys are read by their exact name, not
// under the kit's scratch prefix.
type Inspector struct {
	rdb *goredis.Client
	url string
}

var _ mq.Inspector = (*Inspector)(nil)

// Inspect connects an Inspector to the server at url.
func Inspect(ctx context.Context, url string, tlsCfg *tls.Config) (*Inspector, error) {
	rdb, err := dial(ctx, url, tlsCfg)
	if err != nil {
		return nil, err
	}
	return &Inspector{rdb: rdb, url: url}, nil
}

func (in *Inspector) scrub(err error) error { return fmt.Errorf("%s", scrub(err.Error(), in.url)) }

// Topic reads stream key name: its length, groups and first entry, as
// XINFO STREAM answers.
func (in *Inspector) Topic(ctx context.Context, name string) (mq.TopicInfo, error) {
	typ, err := in.rdb.Type(ctx, name).Result()
	if err != nil {
		return mq.TopicInfo{}, fmt.Errorf("TYPE %s: %w", name, in.scrub(err))
	}
	switch typ {
	case "none":
		return mq.TopicInfo{}, fmt.Errorf("stream key %s: %w", name, mq.ErrNotFound)
	case "stream":
	default:
		return mq.TopicInfo{}, fmt.Errorf("key %s is a %s, not a stream: %w", name, typ, mq.ErrNotFound)
	}
	xs, err := in.rdb.XInfoStream(ctx, name).Result()
	if err != nil {
		return mq.TopicInfo{}, fmt.Errorf("XINFO STREAM %s: %w", name, in.scrub(err))
	}
	groups, err := in.rdb.XInfoGroups(ctx, name).Result()
	if err != nil {
		return mq.TopicInfo{}, fmt.Errorf("XINFO GROUPS %s: %w", name, in.scrub(err))
	}
	var gnames []string
	for _, g := range groups {
		gnames = append(gnames, g.Name)
	}
	sort.Strings(gnames)
	s := map[string]string{
		"type":              "stream",
		"groups":            strings.Join(gnames, ", "),
		"length":            fmt.Sprint(xs.Length),
		"last-generated-id": xs.LastGeneratedID,
		"first-entry-id":    xs.FirstEntry.ID,
		"entries-added":     fmt.Sprint(xs.EntriesAdded),
	}
	if xs.MaxDeletedEntryID != "" {
		s["max-deleted-entry-id"] = xs.MaxDeletedEntryID
	}
	if xs.RecordedFirstEntryID != "" {
		s["recorded-first-entry-id"] = xs.RecordedFirstEntryID
	}
	// A key's TTL evicts it whole under volatile-* and expires it anyway.
	if ttl, err := in.rdb.PTTL(ctx, name).Result(); err == nil {
		s["ttl"] = "none"
		if ttl > 0 {
			s["ttl"] = ttl.String()
		}
	}
	return mq.TopicInfo{Name: name, Settings: s}, nil
}

// Consumer reads group name of stream key topic: its consumers, pending
// count and oldest pending entry (and whether the stream still has it),
// last delivered id, read counter ("null" when Redis has none: the group
// was positioned by XGROUP CREATE or SETID at an id without ENTRIESREAD
// and has read nothing since) and lag.
func (in *Inspector) Consumer(ctx context.Context, topic, name string) (mq.ConsumerInfo, error) {
	groups, err := in.rdb.XInfoGroups(ctx, topic).Result()
	if err != nil {
		if strings.Contains(err.Error(), "no such key") {
			return mq.ConsumerInfo{}, fmt.Errorf("group %s of stream key %s: %w", name, topic, mq.ErrNotFound)
		}
		return mq.ConsumerInfo{}, fmt.Errorf("XINFO GROUPS %s: %w", topic, in.scrub(err))
	}
	var g *goredis.XInfoGroup
	for i := range groups {
		if groups[i].Name == name {
			g = &groups[i]
		}
	}
	if g == nil {
		return mq.ConsumerInfo{}, fmt.Errorf("group %s of stream key %s: %w", name, topic, mq.ErrNotFound)
	}
	cs, err := in.rdb.XInfoConsumers(ctx, topic, name).Result()
	if err != nil {
		return mq.ConsumerInfo{}, fmt.Errorf("XINFO CONSUMERS %s %s: %w", topic, name, in.scrub(err))
	}
	var cnames []string
	for _, c := range cs {
		cnames = append(cnames, c.Name)
	}
	sort.Strings(cnames)
	s := map[string]string{
		"consumers":         strings.Join(cnames, ", "),
		"pending":           fmt.Sprint(g.Pending),
		"last-delivered-id": g.LastDeliveredID,
		"entries-read":      fmt.Sprint(g.EntriesRead),
		"lag":               fmt.Sprint(g.Lag),
	}
	// go-redis reads a null entries-read as 0: the raw reply tells them apart.
	if raw, err := in.rdb.Do(ctx, "XINFO", "GROUPS", topic).Result(); err == nil {
		if v, ok := groupField(raw, name, "entries-read"); ok && v == nil {
			s["entries-read"] = "null"
		}
	}
	if g.Pending > 0 {
		if p, err := in.rdb.XPending(ctx, topic, name).Result(); err == nil {
			s["oldest-pending-id"] = p.Lower
			// A pending entry no longer in the stream was trimmed or
			// deleted before the group acked it (XRANGE of its id).
			if es, err := in.rdb.XRange(ctx, topic, p.Lower, p.Lower).Result(); err == nil {
				s["oldest-pending-in-stream"] = fmt.Sprint(len(es) > 0)
			}
		}
	}
	return mq.ConsumerInfo{Config: mq.ConsumerConfig{Group: name}, Settings: s}, nil
}

// groupField finds field of group name in a raw XINFO GROUPS reply (RESP2:
// flat key-value arrays; RESP3: maps).
func groupField(raw any, name, field string) (any, bool) {
	groups, _ := raw.([]any)
	for _, g := range groups {
		m := map[string]any{}
		switch g := g.(type) {
		case []any:
			for i := 0; i+1 < len(g); i += 2 {
				m[fmt.Sprint(g[i])] = g[i+1]
			}
		case map[any]any:
			for k, v := range g {
				m[fmt.Sprint(k)] = v
			}
		case map[string]any:
			m = g
		}
		if fmt.Sprint(m["name"]) == name {
			v, ok := m[field]
			return v, ok
		}
	}
	return nil, false
}

// ServerSettings are the CONFIG GET parameters the Inspector reads.
var ServerSettings = []string{"appendonly", "appendfsync", "maxmemory-policy", "maxmemory"}

// Server reads the version, the persistence and eviction settings (CONFIG
// GET), the replication role and connected replicas (INFO replication),
// and any IDMP setting the server has (CONFIG GET stream-idmp*). A
// setting the server refuses to tell says so.
func (in *Inspector) Server(ctx context.Context) (mq.ServerInfo, error) {
	si := mq.ServerInfo{Settings: map[string]string{}}
	if info, err := in.rdb.Info(ctx, "server").Result(); err == nil {
		si.Version = "redis " + infoField(info, "redis_version")
	} else {
		si.Version = "not read: " + scrub(err.Error(), in.url)
	}
	for _, p := range append(ServerSettings, "stream-idmp*") {
		v, err := in.rdb.ConfigGet(ctx, p).Result()
		if err != nil {
			if !strings.HasSuffix(p, "*") {
				si.Settings[p] = "not readable: CONFIG GET " + p + ": " + scrub(err.Error(), in.url)
			}
			continue
		}
		for k, x := range v {
			si.Settings[k] = x
		}
	}
	if info, err := in.rdb.Info(ctx, "replication").Result(); err == nil {
		si.Settings["role"] = infoField(info, "role")
		si.Settings["connected_slaves"] = infoField(info, "connected_slaves")
	} else {
		si.Settings["role"] = "not readable: INFO replication: " + scrub(err.Error(), in.url)
	}
	return si, nil
}

// Close closes the Inspector's connection.
func (in *Inspector) Close() error { return in.rdb.Close() }
