package profile

import (
	"errors"
	"fmt"
	"math"
	"reflect"

	"github.com/onceproof/tck/internal/strictyaml"
)

// Error is a malformed profile: one line naming the file, line and field
// (the same type as every strictly decoded file's error).
type Error = strictyaml.Error

// Load reads and validates a profile file.
func Load(path string) (*Profile, error) {
	data, err := strictyaml.ReadFile(path, "profile", strictyaml.MaxBytes)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse decodes and validates a profile; name is used in errors only.
func Parse(name string, data []byte) (*Profile, error) {
	p := &Profile{file: name}
	pos, err := strictyaml.Decode(name, data, p, decodeOptions)
	if err != nil {
		return nil, err
	}
	p.pos = pos
	if err := p.validate(); err != nil {
		return nil, err
	}
	if err := p.validateKinds(); err != nil {
		return nil, err
	}
	if err := p.validateRabbit(); err != nil {
		return nil, err
	}
	if err := p.validateDurability(); err != nil {
		return nil, err
	}
	return p, nil
}

// Bounds a declared count must keep: what a broker accepts.
const (
	// MaxDeliverLimit is the largest maxDeliver: a 32-bit count, which
	// every broker client the kit drives encodes.
	MaxDeliverLimit = math.MaxInt32
	// NATSMaxReplicas is the NATS server's limit on a stream's replicas.
	NATSMaxReplicas = 5
)

var durationType = reflect.TypeFor[Duration]()

// decodeOptions decode a profile strictly: `profile:"required"` marks the
// fields a profile must give.
var decodeOptions = strictyaml.Options{
	RequiredTag: "profile",
	Empty:       "empty profile",
	Enums:       enums,
	Types:       map[reflect.Type]strictyaml.DecodeFunc{durationType: strictyaml.Duration},
}

// enums lists the values each enum type takes; the schema test keeps the
// JSON Schema's enums equal to these.
var enums = map[reflect.Type][]string{
	reflect.TypeFor[Scope]():      {string(ScopeAggregate), string(ScopeGlobal), string(ScopeNone)},
	reflect.TypeFor[Repeated]():   {string(RepeatedConflict), string(RepeatedReplay)},
	reflect.TypeFor[BrokerKind](): {string(KindNATS), string(KindRedis), string(KindKafka), string(KindRabbitMQ)},
	reflect.TypeFor[Retention]():  {string(RetentionLimits), string(RetentionWorkQueue), string(RetentionInterest)},
	reflect.TypeFor[Storage]():    {string(StorageFile), string(StorageMemory)},
	reflect.TypeFor[AckPolicy]():  {string(AckExplicit), string(AckAll), string(AckNone)},
	reflect.TypeFor[Effect]():     {string(EffectVersionedUpsert), string(EffectUpsert), string(EffectNotIdempotent)},
	reflect.TypeFor[KeyPart]():    {string(KeyMessageID), string(KeyVersion), string(KeyEventID), string(KeyScope)},
	reflect.TypeFor[Store]():      {string(StoreDurable), string(StoreMemory)},
	reflect.TypeFor[AckOrder]():   {string(EffectThenAck), string(AckThenEffect)},
	// Broker settings of issue 25 (redis.go, kafka.go).
	reflect.TypeFor[Discard]():       {string(DiscardOld), string(DiscardNew)},
	reflect.TypeFor[DeliverPolicy](): {string(DeliverAll), string(DeliverLast), string(DeliverNew), string(DeliverByStartSeq), string(DeliverByStartTime), string(DeliverLastPerSubject)},
	reflect.TypeFor[ReplayPolicy]():  {string(ReplayInstant), string(ReplayOriginal)},
	reflect.TypeFor[AppendFsync]():   {string(FsyncAlways), string(FsyncEverysec), string(FsyncNo)},
	reflect.TypeFor[TrimStrategy]():  {string(TrimMaxLen), string(TrimMinID)},
	reflect.TypeFor[CleanupPolicy](): {string(CleanupDelete), string(CleanupCompact), string(CleanupCompactDelete)},
	reflect.TypeFor[KafkaAcks]():     {string(AcksAll), string(AcksLeader), string(AcksNone)},
	// RabbitMQ (rabbitmq.go).
	reflect.TypeFor[QueueType]():          {string(QueueClassic), string(QueueQuorum), string(QueueStream)},
	reflect.TypeFor[DeadLetterStrategy](): {string(DLAtMostOnce), string(DLAtLeastOnce)},
	reflect.TypeFor[Overflow]():           {string(OverflowDropHead), string(OverflowRejectPublish), string(OverflowRejectPublishDLX)},
	reflect.TypeFor[AckMode]():            {string(AckManual), string(AckAuto)},
}

func contains[T comparable](xs []T, x T) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// validate checks what a field-by-field decode cannot: the schema version,
// references between sections, and settings the broker itself would refuse.
func (p *Profile) validate() error {
	bad := func(path, format string, args ...any) error {
		return &Error{File: p.file, Line: p.Line(path), Field: path, Msg: fmt.Sprintf(format, args...)}
	}
	if p.Schema != SchemaVersion {
		return bad("schema", "%q is not %q (the format this kit reads)", p.Schema, SchemaVersion)
	}
	names := map[string]string{}
	unique := func(kind, name, path string) error {
		key := kind + "\x00" + name
		if prev, dup := names[key]; dup {
			return bad(path, "%s %q is declared twice (first at %s)", kind, name, prev)
		}
		names[key] = path
		return nil
	}
	for i, b := range p.Brokers {
		bp := fmt.Sprintf("brokers[%d]", i)
		if err := unique("broker", b.Name, bp+".name"); err != nil {
			return err
		}
		for j, s := range b.Streams {
			sp := fmt.Sprintf("%s.streams[%d]", bp, j)
			if err := unique("stream of "+b.Name, s.Name, sp+".name"); err != nil {
				return err
			}
			if b.Kind != KindNATS {
				if s.Duplicates != 0 {
					return bad(sp+".duplicates", "a %s stream has no producer de-dupe window; leave duplicates out", b.Kind)
				}
				if s.DuplicatesRefreshOnHit {
					return bad(sp+".duplicatesRefreshOnHit", "a %s stream has no producer de-dupe window", b.Kind)
				}
			}
			if s.Replicas < 0 {
				return bad(sp+".replicas", "must not be negative")
			}
			if b.Kind == KindNATS && s.Replicas > NATSMaxReplicas {
				return bad(sp+".replicas", "%d is above %d, the most replicas a NATS stream takes", s.Replicas, NATSMaxReplicas)
			}
			if b.Kind == KindNATS {
				if err := p.validateNATSStream(sp, &b.Streams[j]); err != nil {
					return err
				}
			}
			for k, c := range s.Consumers {
				cp := fmt.Sprintf("%s.consumers[%d]", sp, k)
				if err := unique("consumer of "+b.Name+"/"+s.Name, c.Name, cp+".name"); err != nil {
					return err
				}
				if b.Kind != KindNATS && len(c.Backoff) > 0 {
					return bad(cp+".backoff", "a back-off list is a NATS consumer setting, not %s", b.Kind)
				}
				if c.MaxDeliver < -1 {
					return bad(cp+".maxDeliver", "%d: use a positive number, or 0 or -1 for unlimited", c.MaxDeliver)
				}
				if c.MaxDeliver > MaxDeliverLimit {
					return bad(cp+".maxDeliver", "%d is above %d, the largest delivery limit the kit accepts (0 or -1: unlimited)", c.MaxDeliver, MaxDeliverLimit)
				}
				// The NATS server refuses this consumer; so do we.
				if c.MaxDeliver > 0 && len(c.Backoff) > c.MaxDeliver {
					return bad(cp+".backoff", "%d back-off entries but maxDeliver %d (NATS refuses a back-off list longer than maxDeliver)", len(c.Backoff), c.MaxDeliver)
				}
			}
		}
	}
	for i, pr := range p.Producers {
		pp := fmt.Sprintf("producers[%d]", i)
		if err := unique("producer", pr.Name, pp+".name"); err != nil {
			return err
		}
		if err := p.checkRef(pp, pr.Broker, pr.Stream, ""); err != nil {
			return err
		}
		for k, r := range pr.Retries {
			if r == 0 || (k > 0 && r <= pr.Retries[k-1]) {
				return bad(fmt.Sprintf("%s.retries[%d]", pp, k), "retry times are after the first attempt and ascending: %s", r)
			}
		}
		if pr.Outbox && !pr.AfterCommit {
			return bad(pp+".outbox", "an outbox feeds events a database transaction committed: set afterCommit: true too")
		}
	}
	for i, c := range p.Consumers {
		cp := fmt.Sprintf("consumers[%d]", i)
		if err := unique("consumer", c.Name, cp+".name"); err != nil {
			return err
		}
		if err := p.checkRef(cp, c.Broker, c.Stream, c.BrokerConsumer); err != nil {
			return err
		}
		if len(c.Scopes) == 0 {
			return bad(cp+".scopes", "a consumer has at least one side-effect scope")
		}
		seen := map[string]bool{}
		for k, s := range c.Scopes {
			if seen[s.Name] {
				return bad(fmt.Sprintf("%s.scopes[%d].name", cp, k), "scope %q is declared twice", s.Name)
			}
			seen[s.Name] = true
		}
		if c.Dedupe != nil {
			if len(c.Dedupe.Key) == 0 {
				return bad(cp+".dedupe.key", "a de-dupe key has at least one part")
			}
			parts := map[KeyPart]bool{}
			for k, part := range c.Dedupe.Key {
				if parts[part] {
					return bad(fmt.Sprintf("%s.dedupe.key[%d]", cp, k), "%s is given twice", part)
				}
				parts[part] = true
			}
		}
	}
	if err := p.validateKafkaShare(); err != nil { // kafkashare.go
		return err
	}
	return p.validateEnvelopes()
}

// checkRef checks that a broker, stream and (if named) broker consumer exist.
func (p *Profile) checkRef(path, broker, stream, consumer string) error {
	b, s := p.stream(broker, stream)
	switch {
	case b == nil:
		return &Error{File: p.file, Line: p.Line(path + ".broker"), Field: path + ".broker", Msg: fmt.Sprintf("no broker named %q under brokers", broker)}
	case s == nil:
		return &Error{File: p.file, Line: p.Line(path + ".stream"), Field: path + ".stream", Msg: fmt.Sprintf("broker %q has no stream named %q", broker, stream)}
	case consumer != "" && s.consumer(consumer) == nil:
		return &Error{File: p.file, Line: p.Line(path + ".brokerConsumer"), Field: path + ".brokerConsumer", Msg: fmt.Sprintf("stream %s/%s has no consumer named %q", broker, stream, consumer)}
	}
	return nil
}

// IsMalformed reports whether err is a malformed profile (exit 3).
func IsMalformed(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
