package profile

import (
	"cmp"
	"fmt"
	"strings"
	"time"
)

// RedisServer is what a team relies on of its Redis server (CONFIG GET
// and INFO replication read it back, BR-6.1).
type RedisServer struct {
	// AppendOnly: acked entries are relied on to survive a restart through
	// the append-only file (appendonly yes).
	AppendOnly bool `yaml:"appendOnly" json:"appendOnly"`
	// AppendFsync is the AOF fsync policy (absent: everysec, Redis's
	// default).
	AppendFsync AppendFsync `yaml:"appendFsync" json:"appendFsync,omitempty"`
	// MaxmemoryPolicy is what Redis does at maxmemory (absent:
	// noeviction, Redis's default).
	MaxmemoryPolicy string `yaml:"maxmemoryPolicy" json:"maxmemoryPolicy,omitempty"`
	// Replicas is how many replicas are connected to the primary (absent:
	// 0, a single server).
	Replicas int `yaml:"replicas" json:"replicas,omitempty"`
	// Version is the server's version ("7.2.4", "8.6"): what it accepts
	// hangs on it (XADD IDMP from 8.6). Absent: not known.
	Version string `yaml:"version" json:"version,omitempty"`
}

// RedisIDMP is a stream key's idempotent production (Redis 8.6: the
// producers write XADD ... IDMP producer-id idempotent-id; XCFGSET sets
// the stream's IDMP-DURATION and IDMP-MAXSIZE).
type RedisIDMP struct {
	// Duration is IDMP-DURATION, how long Redis keeps an idempotent id
	// (absent: 100s, Redis's default; 1s to 24h, whole seconds).
	Duration Duration `yaml:"duration" json:"duration,omitempty"`
	// MaxSize is IDMP-MAXSIZE, the most recent ids kept per producer
	// (absent: 100; 1 to 10000): an older id is evicted before its time.
	MaxSize int `yaml:"maxSize" json:"maxSize,omitempty"`
}

// Redis IDMP's defaults and bounds (redis.io, XCFGSET).
const (
	RedisDefaultIDMPDuration = 100 * time.Second
	RedisDefaultIDMPMaxSize  = 100
	RedisMaxIDMPDuration     = 24 * time.Hour
	RedisMaxIDMPMaxSize      = 10000
)

// Window is the IDMP window and its limit per producer, the defaults
// where not declared.
func (i *RedisIDMP) Window() (time.Duration, int) {
	return cmp.Or(i.Duration.D(), RedisDefaultIDMPDuration), cmp.Or(i.MaxSize, RedisDefaultIDMPMaxSize)
}

// redisVersionAtLeast says whether version v ("8.6.0") is at least
// major.minor; ok is false when v is not a version.
func redisVersionAtLeast(v string, major, minor int) (at, ok bool) {
	var ma, mi int
	if n, _ := fmt.Sscanf(v, "%d.%d", &ma, &mi); n == 0 || ma <= 0 {
		return false, false
	}
	return ma > major || (ma == major && mi >= minor), true
}

// AppendFsync is Redis's appendfsync.
type AppendFsync string

const (
	FsyncAlways   AppendFsync = "always"
	FsyncEverysec AppendFsync = "everysec" // up to a second of acked writes lost on a crash
	FsyncNo       AppendFsync = "no"       // the kernel decides: up to ~30 s lost
)

// Redis defaults of what a profile leaves out.
const (
	RedisDefaultFsync     = FsyncEverysec
	RedisDefaultMaxmemory = "noeviction"
)

// RedisStream is how the team's producers trim one stream key (XADD
// MAXLEN/MINID or XTRIM).
type RedisStream struct {
	// Trim is the strategy; absent: the producers never trim.
	Trim TrimStrategy `yaml:"trim" json:"trim,omitempty"`
	// MaxLen is the MAXLEN threshold (entries kept).
	MaxLen int `yaml:"maxLen" json:"maxLen,omitempty"`
	// MinIDAge: the producers trim with MINID at now minus this age.
	MinIDAge Duration `yaml:"minIdAge" json:"minIdAge,omitempty"`
	// Approximate: the trim is written with ~ (whole radix nodes).
	Approximate bool `yaml:"approximate" json:"approximate"`
	// IDMP: the producers add with XADD IDMP, their message id as the
	// idempotent id (Redis 8.6); absent: no producer de-dupe.
	IDMP *RedisIDMP `yaml:"idmp" json:"idmp,omitempty"`
}

// TrimStrategy is XADD/XTRIM's strategy.
type TrimStrategy string

const (
	TrimMaxLen TrimStrategy = "maxlen"
	TrimMinID  TrimStrategy = "minid"
)

// RedisGroup is a Redis consumer group's members and the idle time after
// which the workers claim another's pending entry (XAUTOCLAIM min-idle).
type RedisGroup struct {
	Consumers    []string `yaml:"consumers" json:"consumers,omitempty"`
	ClaimMinIdle Duration `yaml:"claimMinIdle" json:"claimMinIdle,omitempty"`
}

// validateKinds refuses a kind's settings on another kind's broker and
// what each product refuses itself.
func (p *Profile) validateKinds() error {
	bad := func(path, format string, args ...any) error {
		return &Error{File: p.file, Line: p.Line(path), Field: path, Msg: fmt.Sprintf(format, args...)}
	}
	for i, b := range p.Brokers {
		bp := fmt.Sprintf("brokers[%d]", i)
		if b.Redis != nil && b.Kind != KindRedis {
			return bad(bp+".redis", "a redis block on a %s broker", b.Kind)
		}
		if b.Kafka != nil && b.Kind != KindKafka {
			return bad(bp+".kafka", "a kafka block on a %s broker", b.Kind)
		}
		if r := b.Redis; r != nil && r.Replicas < 0 {
			return bad(bp+".redis.replicas", "must not be negative")
		}
		if k := b.Kafka; k != nil && (k.ProducerIDExpiration < 0 || k.TransactionalIDExpiration < 0) {
			return bad(bp+".kafka", "an expiration must not be negative")
		}
		for j, s := range b.Streams {
			sp := fmt.Sprintf("%s.streams[%d]", bp, j)
			if b.Kind != KindNATS {
				for _, f := range []struct {
					name string
					set  bool
				}{{"discard", s.Discard != ""}, {"maxMsgs", s.MaxMsgs != 0}, {"maxBytes", s.MaxBytes != 0}, {"maxMsgsPerSubject", s.MaxMsgsPerSubject != 0}, {"maxMsgSize", s.MaxMsgSize != 0}, {"allowAtomic", s.AllowAtomic}} {
					if f.set {
						return bad(sp+"."+f.name, "%s is a NATS stream setting, not %s", f.name, b.Kind)
					}
				}
			}
			for _, n := range []struct {
				name string
				v    int
			}{{"maxMsgs", s.MaxMsgs}, {"maxBytes", s.MaxBytes}, {"maxMsgsPerSubject", s.MaxMsgsPerSubject}, {"maxMsgSize", s.MaxMsgSize}} {
				if n.v < -1 {
					return bad(sp+"."+n.name, "%d: use a positive number, or 0 or -1 for unlimited", n.v)
				}
			}
			if s.Redis != nil && b.Kind != KindRedis {
				return bad(sp+".redis", "a redis block on a %s stream", b.Kind)
			}
			if s.Kafka != nil && b.Kind != KindKafka {
				return bad(sp+".kafka", "a kafka block on a %s stream", b.Kind)
			}
			if r := s.Redis; r != nil && r.IDMP != nil {
				if err := p.validateIDMP(sp+".redis.idmp", bp, b.Redis, r.IDMP); err != nil {
					return err
				}
			}
			if r := s.Redis; r != nil {
				switch {
				case r.Trim == TrimMaxLen && r.MaxLen <= 0:
					return bad(sp+".redis.maxLen", "trim maxlen needs maxLen, the entries kept (a positive number)")
				case r.Trim == TrimMinID && r.MinIDAge <= 0:
					return bad(sp+".redis.minIdAge", "trim minid needs minIdAge, how old an entry the producers cut")
				case r.Trim != TrimMaxLen && r.MaxLen != 0:
					return bad(sp+".redis.maxLen", "maxLen is for trim: maxlen")
				case r.Trim != TrimMinID && r.MinIDAge != 0:
					return bad(sp+".redis.minIdAge", "minIdAge is for trim: minid")
				}
			}
			if k := s.Kafka; k != nil {
				if k.Partitions < 0 || k.MinInsyncReplicas < 0 || k.MaxMessageBytes < 0 {
					return bad(sp+".kafka", "partitions, minInsyncReplicas and maxMessageBytes must not be negative")
				}
				if k.RetentionBytes < -1 {
					return bad(sp+".kafka.retentionBytes", "%d: use a positive number of bytes, or -1 for no size limit", k.RetentionBytes)
				}
				if k.MinInsyncReplicas > 0 && s.Replicas > 0 && k.MinInsyncReplicas > s.Replicas {
					return bad(sp+".kafka.minInsyncReplicas", "%d is above the %d replicas: every acks=all produce would be refused (NOT_ENOUGH_REPLICAS)", k.MinInsyncReplicas, s.Replicas)
				}
			}
			for k, c := range s.Consumers {
				cp := fmt.Sprintf("%s.consumers[%d]", sp, k)
				if b.Kind != KindNATS {
					if len(c.FilterSubjects) > 0 || c.DeliverPolicy != "" || c.ReplayPolicy != "" || c.MaxAckPending != 0 {
						return bad(cp, "filterSubjects, deliverPolicy, replayPolicy and maxAckPending are NATS consumer settings, not %s", b.Kind)
					}
				}
				if c.MaxAckPending < -1 {
					return bad(cp+".maxAckPending", "%d: use a positive number, or -1 for unlimited", c.MaxAckPending)
				}
				if c.Redis != nil && b.Kind != KindRedis {
					return bad(cp+".redis", "a redis block on a %s consumer", b.Kind)
				}
			}
		}
	}
	for i, pr := range p.Producers {
		pp := fmt.Sprintf("producers[%d]", i)
		b, _ := p.stream(pr.Broker, pr.Stream)
		if pr.Kafka != nil && b.Kind != KindKafka {
			return bad(pp+".kafka", "a kafka block on a producer to a %s broker", b.Kind)
		}
		if pr.Subject != "" && b.Kind != KindNATS {
			return bad(pp+".subject", "a subject is NATS's, not %s's", b.Kind)
		}
		if k := pr.Kafka; k != nil && (k.MaxInFlight < 0 || (k.Retries != nil && *k.Retries < 0) || k.DeliveryTimeout < 0) {
			return bad(pp+".kafka", "maxInFlight, retries and deliveryTimeout must not be negative")
		}
		// What the client refuses at start-up is no running producer.
		if _, field, _, refused := pr.Kafka.Idempotence(); pr.Kafka != nil && refused != "" {
			return bad(pp+".kafka."+field, "%s", refused)
		}
	}
	for i, c := range p.Consumers {
		if c.Workers < 0 {
			return bad(fmt.Sprintf("consumers[%d].workers", i), "must not be negative")
		}
	}
	return nil
}

// validateIDMP refuses IDMP on a server the profile does not say is 8.6 or
// later, and the values XCFGSET refuses.
func (p *Profile) validateIDMP(path, bp string, srv *RedisServer, i *RedisIDMP) error {
	bad := func(field, format string, args ...any) error {
		return &Error{File: p.file, Line: p.Line(field), Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	v := ""
	if srv != nil {
		v = srv.Version
	}
	switch at, ok := redisVersionAtLeast(v, 8, 6); {
	case v == "":
		return bad(path, "XADD IDMP needs Redis 8.6 or later: declare the server's version at %s.redis.version", bp)
	case !ok:
		return bad(bp+".redis.version", "%q: write the server's version as Redis prints it, e.g. 8.6.0", v)
	case !at:
		return bad(path, "XADD IDMP needs Redis 8.6 or later; the profile declares version %s (before 8.6 a stream has no producer de-dupe)", v)
	}
	if d := i.Duration.D(); d != 0 && (d < time.Second || d > RedisMaxIDMPDuration || d%time.Second != 0) {
		return bad(path+".duration", "%s: IDMP-DURATION is whole seconds from 1s to 24h (XCFGSET)", i.Duration)
	}
	if i.MaxSize < 0 || i.MaxSize > RedisMaxIDMPMaxSize {
		return bad(path+".maxSize", "%d: IDMP-MAXSIZE is 1 to %d ids per producer (XCFGSET)", i.MaxSize, RedisMaxIDMPMaxSize)
	}
	return nil
}

// kindChecks are the hazard checks on the product settings of issue 25;
// they follow Checks in the report.
var kindChecks = []Check{
	{"nats-discard-new", "BR-6.1", "a full NATS stream with discard new refuses publishes"},
	{"nats-filter-mismatch", "BR-6.1", "a consumer's filter subject does not match what the declared producers publish"},
	{"nats-deliver-not-all", "BR-6.1", "a consumer that starts past the stored events never sees them"},
	{"nats-ack-pending-stalls", "BR-6.1", "max_ack_pending below the workers stalls the pool"},
	{"redis-eviction", "BR-3.1", "a maxmemory-policy that may evict stream keys"},
	{"redis-fsync", "BR-3.1", "acked entries not on disk when XADD answers (appendfsync everysec or no, or no AOF)"},
	{"redis-trim-pending", "BR-4.3", "a trim that can cut entries still pending"},
	{"redis-claim-before-done", "BR-4.2", "a claim min-idle time shorter than the workers' processing time"},
	{"kafka-no-idempotence", "BR-5.1", "a producer that runs without idempotence: set false, or unset and turned off by acks, retries 0 or more than 5 in flight"},
	{"kafka-acks", "BR-3.1", "a producer with acks below all"},
	{"kafka-min-isr", "BR-3.1", "min.insync.replicas 1 (declared or its default) with more replicas: an ack from the leader alone"},
	{"kafka-pid-expiry", "BR-5.1", "a producer client's retry horizon longer than producer.id.expiration.ms"},
	{"kafka-retention-replay", "BR-5.4", "retention shorter than the declared replay reach"},
}

// KindChecks lists the product-setting checks (NATS, Redis, Kafka).
func KindChecks() []Check { return append([]Check(nil), kindChecks...) }

// allChecks is Checks then kindChecks: the report's order.
func allChecks() []Check {
	return append(append(append(append([]Check(nil), Checks...), kindChecks...), durabilityChecks...), rabbitChecks...)
}

// kinds runs the product-setting checks.
func (f *finder) kinds() {
	for i := range f.p.Brokers {
		b := &f.p.Brokers[i]
		switch b.Kind {
		case KindNATS:
			f.natsKind(i, b)
		case KindRedis:
			f.redisKind(i, b)
		case KindKafka:
			f.kafkaKind(i, b)
		case KindRabbitMQ:
			f.rabbitKind(i, b) // rabbitmq.go
		}
	}
	for i := range f.p.Producers {
		f.kafkaProducer(i, &f.p.Producers[i])
		f.rabbitProducer(i, &f.p.Producers[i])
	}
}

// RedisEvicts says whether a maxmemory-policy may evict a stream key that
// has no expiry (allkeys-*): volatile-* evict only keys with a TTL.
func RedisEvicts(policy string) bool { return strings.HasPrefix(policy, "allkeys-") }

func (f *finder) redisKind(i int, b *Broker) {
	bp := fmt.Sprintf("brokers[%d]", i)
	subject := "redis " + b.Name
	r := b.Redis
	if r == nil {
		r = &RedisServer{}
	}
	if pol := orDefault(r.MaxmemoryPolicy, RedisDefaultMaxmemory); RedisEvicts(pol) {
		f.add("redis-eviction", subject, bp+".redis.maxmemoryPolicy",
			fmt.Sprintf("maxmemory-policy %s may evict a stream key whole at maxmemory: every entry in it, acked by XADD, pending or not, is gone", pol),
			[]string{fmt.Sprintf("maxmemory-policy %s: at maxmemory Redis evicts any key by its policy, and a stream key is one key; noeviction refuses the write instead (an error the producer sees and retries)", pol)},
			Mark{Label: "t0", Text: "XADD answers with an id: the entry is stored"},
			Mark{Label: "t1", Text: "memory reaches maxmemory: the stream key is evicted"},
			Mark{Label: "t2", Text: "the group reads: no key, the acked entry is lost"})
	}
	fsync := orDefault(string(r.AppendFsync), string(RedisDefaultFsync))
	if !r.AppendOnly || fsync != string(FsyncAlways) {
		why := fmt.Sprintf("appendonly yes, appendfsync %s: XADD answers before the entry is fsynced; a crash loses up to %s of acked entries", fsync, map[string]string{"everysec": "1 s (2 s when a slow fsync is pending)", "no": "what the kernel has not flushed (about 30 s on Linux)"}[fsync])
		field := bp + ".redis.appendFsync"
		if !r.AppendOnly {
			why = "appendonly no: only RDB snapshots, if configured, persist; a crash loses every entry added since the last snapshot"
			field = bp + ".redis.appendOnly"
		}
		f.add("redis-fsync", subject, field,
			"an entry XADD acknowledged is not yet on disk: a crash of the server loses it",
			[]string{why, "appendonly yes with appendfsync always writes and fsyncs before the answer"},
			Mark{Label: "t0", Text: "XADD answers with an id"},
			Mark{Label: "t0+", Text: "the server crashes before the fsync"},
			Mark{Label: "t1", Text: "restart: the entry is not in the stream"})
	}
	for j := range b.Streams {
		s := &b.Streams[j]
		sp := fmt.Sprintf("%s.streams[%d]", bp, j)
		f.redisTrim(sp, b, s)
		for k := range s.Consumers {
			f.redisClaim(fmt.Sprintf("%s.consumers[%d]", sp, k), b, s, &s.Consumers[k])
		}
	}
}

// maxProcessing is the longest declared processing time of the application
// consumers reading group g of stream s, and the path of that field.
func (f *finder) maxProcessing(b *Broker, s *Stream, g string) (time.Duration, string) {
	var d time.Duration
	field := ""
	for i, c := range f.p.Consumers {
		if c.Broker == b.Name && c.Stream == s.Name && c.BrokerConsumer == g && c.ProcessingTime.D() > d {
			d, field = c.ProcessingTime.D(), fmt.Sprintf("consumers[%d].processingTime", i)
		}
	}
	return d, field
}

func (f *finder) redisTrim(sp string, b *Broker, s *Stream) {
	r := s.Redis
	if r == nil || r.Trim == "" || len(s.Consumers) == 0 {
		return
	}
	subject := fmt.Sprintf("redis %s/%s", b.Name, s.Name)
	approx := "exact"
	if r.Approximate {
		approx = "approximate (~: whole radix-tree nodes, so it cuts at least as far as a node boundary allows)"
	}
	// An entry must outlive a crashed worker's claim: the min idle time
	// plus the processing of the worker that claims it.
	var hold time.Duration
	for _, c := range s.Consumers {
		p, _ := f.maxProcessing(b, s, c.Name)
		if c.Redis != nil {
			hold = max(hold, c.Redis.ClaimMinIdle.D()+p)
		} else {
			hold = max(hold, p)
		}
	}
	switch r.Trim {
	case TrimMaxLen:
		arith := []string{fmt.Sprintf("MAXLEN %d, %s: XADD removes the oldest entries beyond %d whether or not a group's pending list holds them; XACK/XCLAIM of a cut entry find nothing", r.MaxLen, approx, r.MaxLen)}
		if hold > 0 {
			arith = append(arith, fmt.Sprintf("a pending entry must survive %s (claim min-idle plus processing): above %d entries / %s = %.1f entries/s published, it is cut before a worker can claim it",
				hold, r.MaxLen, hold, float64(r.MaxLen)/hold.Seconds()))
		} else {
			arith = append(arith, "no claim min-idle or processing time declared: the kit cannot bound the rate at which a pending entry is cut")
		}
		f.add("redis-trim-pending", subject, sp+".redis.maxLen",
			fmt.Sprintf("MAXLEN %d trims by count: an entry still pending when %d newer ones arrive is deleted, and the group never processes it", r.MaxLen, r.MaxLen),
			arith,
			Mark{Label: "t0", Text: "entry e1 delivered to a worker (pending)"},
			Mark{Label: "t0+", Text: fmt.Sprintf("%d newer entries added with MAXLEN %d: e1 cut", r.MaxLen, r.MaxLen)},
			Mark{Label: "t1", Text: "the worker crashed; XAUTOCLAIM returns e1 as deleted: its effect never happens"})
	case TrimMinID:
		if hold > 0 && r.MinIDAge.D() > hold {
			return
		}
		arith := []string{fmt.Sprintf("MINID now-%s, %s: every entry older than %s is cut, pending or not", r.MinIDAge, approx, r.MinIDAge)}
		if hold > 0 {
			arith = append(arith, fmt.Sprintf("a pending entry must survive %s (claim min-idle plus processing) >= %s: it is cut before it is claimed", hold, r.MinIDAge))
		} else {
			arith = append(arith, "no claim min-idle or processing time declared: any pending entry older than the cut is lost")
		}
		f.add("redis-trim-pending", subject, sp+".redis.minIdAge",
			fmt.Sprintf("MINID trims entries older than %s: an entry pending that long is deleted before a worker claims it", r.MinIDAge),
			arith,
			Mark{Text: "entry e1 delivered to a worker that crashes (pending)"},
			Mark{At: r.MinIDAge, Text: "a producer's XADD MINID cuts e1"},
			Mark{At: Duration(max(hold, r.MinIDAge.D())), Text: "XAUTOCLAIM: e1 deleted, its effect never happens"})
	}
}

func (f *finder) redisClaim(cp string, b *Broker, s *Stream, c *BrokerConsumer) {
	if c.Redis == nil || c.Redis.ClaimMinIdle <= 0 {
		return
	}
	p, field := f.maxProcessing(b, s, c.Name)
	idle := c.Redis.ClaimMinIdle.D()
	if p == 0 || idle > p {
		return
	}
	f.add("redis-claim-before-done", fmt.Sprintf("redis %s/%s group %s", b.Name, s.Name, c.Name), cp+".redis.claimMinIdle",
		fmt.Sprintf("the workers claim an entry idle %s, but processing takes up to %s: a live worker's entry is claimed and processed twice", idle, p),
		[]string{fmt.Sprintf("claimMinIdle %s <= processingTime %s (%s): XAUTOCLAIM takes an entry whose worker is still on it", idle, p, field)},
		Mark{Text: "worker A reads e1 (pending, idle clock starts)"},
		Mark{At: Duration(idle), Text: "worker B's XAUTOCLAIM min-idle " + idle.String() + ": e1 claimed, processed again"},
		Mark{At: Duration(p), Text: "worker A finishes e1 and XACKs: the effect was done twice"})
}

// kindPipeline restates the product settings of issue 25, one line per
// broker, stream or group that declares any.
func kindPipeline(p *Profile) []string {
	var out []string
	for _, b := range p.Brokers {
		switch b.Kind {
		case KindRedis:
			r := b.Redis
			if r == nil {
				r = &RedisServer{}
			}
			out = append(out, fmt.Sprintf("redis %s: appendonly %t, appendfsync %s, maxmemory-policy %s, %d replicas", b.Name, r.AppendOnly,
				orDefault(string(r.AppendFsync), string(RedisDefaultFsync)), orDefault(r.MaxmemoryPolicy, RedisDefaultMaxmemory), r.Replicas))
			for _, s := range b.Streams {
				trim := "never trimmed"
				if t := s.Redis; t != nil && t.Trim != "" {
					trim = fmt.Sprintf("trimmed %s %d (approximate %t)", t.Trim, t.MaxLen, t.Approximate)
					if t.Trim == TrimMinID {
						trim = fmt.Sprintf("trimmed minid now-%s (approximate %t)", t.MinIDAge, t.Approximate)
					}
				}
				idmp := "no producer de-dupe (no XADD IDMP)"
				if s.Redis != nil && s.Redis.IDMP != nil {
					w, n := s.Redis.IDMP.Window()
					idmp = fmt.Sprintf("XADD IDMP, IDMP-DURATION %s, IDMP-MAXSIZE %d per producer", Duration(w), n)
				}
				out = append(out, fmt.Sprintf("  stream key %s: %s; %s", s.Name, trim, idmp))
				for _, c := range s.Consumers {
					idle := "claim min-idle not declared"
					if c.Redis != nil && c.Redis.ClaimMinIdle > 0 {
						idle = "claim min-idle " + c.Redis.ClaimMinIdle.String()
					}
					out = append(out, fmt.Sprintf("    group %s: %s", c.Name, idle))
				}
			}
		case KindRabbitMQ:
			out = append(out, rabbitPipeline(&b)...)
		case KindNATS:
			if b.NATS != nil || b.Durability != nil {
				i, a := b.NATS.Sync()
				out = append(out, fmt.Sprintf("nats %s: sync_interval %s, sync_always %t; relies on surviving a power loss: %t", b.Name, Duration(i), a, b.SurvivesPowerLoss()))
			}
		case KindKafka:
			k := b.Kafka
			if k == nil {
				k = &KafkaBroker{}
			}
			exp := KafkaDefaultPIDExpiration
			if k.ProducerIDExpiration > 0 {
				exp = k.ProducerIDExpiration.D()
			}
			out = append(out, fmt.Sprintf("kafka %s: producer.id.expiration.ms %s", b.Name, exp))
			for _, s := range b.Streams {
				t := s.Kafka
				if t == nil {
					t = &KafkaTopic{}
				}
				mis, _ := t.MinISR()
				fm, fms := t.Flush()
				out = append(out, fmt.Sprintf("  topic %s: cleanup.policy %s, min.insync.replicas %d, replication factor %d, unclean leader election %t, retention.bytes %d, max.message.bytes %d, flush.messages %d, flush.ms %d",
					s.Name, orDefault(string(t.CleanupPolicy), string(CleanupDelete)), mis, max(s.Replicas, 1), t.UncleanLeaderElection,
					cmp.Or(t.RetentionBytes, KafkaDefaultRetentionBytes), cmp.Or(t.MaxMessageBytes, KafkaDefaultMaxMessageBytes), fm, fms))
			}
		}
	}
	for _, pr := range p.Producers {
		if k := pr.Kafka; k != nil {
			idem, _, _, _ := k.Idempotence()
			h, how := k.Horizon()
			inflight := k.MaxInFlight
			if inflight == 0 {
				inflight = KafkaDefaultMaxInFlight
			}
			out = append(out, fmt.Sprintf("producer %s client: idempotent %t, acks %s, max.in.flight %d, client retry horizon %s (%s)", pr.Name, idem,
				orDefault(string(k.Acks), string(AcksAll)), inflight, h, how))
		}
	}
	return out
}
