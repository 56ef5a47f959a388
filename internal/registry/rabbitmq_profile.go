package registry

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/onceproof/tck/adapters/broker/rabbitmq"
	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/mq"
)

// DeclaredRabbitMQ is what a profile declares for a RabbitMQ target: the
// queues of its one RabbitMQ broker with their effective arguments by
// RabbitMQ's names, each left out filled with RabbitMQ's default (by the
// declared version where it changed) so that it is compared too, and the
// node's consumer_timeout where declared. A profile with no RabbitMQ queue
// gives nil; one with several RabbitMQ brokers is refused.
func DeclaredRabbitMQ(p *profile.Profile, onServer bool) (*kithooks.Declared, error) {
	var rb []profile.Broker
	for _, b := range p.Brokers {
		if b.Kind == profile.KindRabbitMQ {
			rb = append(rb, b)
		}
	}
	switch {
	case len(rb) == 0 || len(rb[0].Streams) == 0:
		return nil, nil
	case len(rb) > 1:
		return nil, fmt.Errorf("profile %s declares %d RabbitMQ brokers; a run certifies one server: keep one RabbitMQ broker in the profile", p.File(), len(rb))
	}
	b := rb[0]
	srv := b.RabbitMQ
	if srv == nil {
		srv = &profile.RabbitMQServer{}
	}
	d := &kithooks.Declared{Source: fmt.Sprintf("%s (profile %s, broker %s)", p.File(), p.Name, b.Name), OnServer: onServer}
	// consumer_timeout is compared when declared: RabbitMQ does not report
	// it, so an undeclared one would only ever be unknown.
	if srv.ConsumerTimeout > 0 {
		d.Server = map[string]string{"consumer_timeout": strconv.FormatInt(srv.ConsumerTimeout.D().Milliseconds(), 10)}
	}
	for _, pr := range p.Producers {
		if pr.Broker == b.Name {
			d.Producers = append(d.Producers, kithooks.DeclaredProducer{Name: pr.Name, Stream: pr.Stream, KeepsID: pr.KeepsMessageID})
		}
	}
	for _, s := range b.Streams {
		d.Streams = append(d.Streams, kithooks.DeclaredStream{ClientSide: true, Noun: "queue",
			Topic: mq.TopicInfo{Name: s.Name, Settings: RabbitQueueSettings(s.RabbitMQ, srv.Version), Config: mq.TopicConfig{Retention: mq.Limits}}})
	}
	return d, nil
}

// RabbitQueueSettings are a declared queue's settings by RabbitMQ's
// argument names, defaults filled in as the Inspector fills them.
func RabbitQueueSettings(q *profile.RabbitMQQueue, version string) map[string]string {
	if q == nil {
		q = &profile.RabbitMQQueue{}
	}
	ms := func(d profile.Duration) string {
		if d == 0 {
			return ""
		}
		return strconv.FormatInt(d.D().Milliseconds(), 10)
	}
	qt := orS(string(q.Type), string(profile.QueueClassic))
	set := map[string]string{
		"x-queue-type":           qt,
		"x-dead-letter-exchange": q.DeadLetterExchange,
		"x-message-ttl":          ms(q.MessageTTL),
		"x-expires":              ms(q.Expires),
		"x-max-length":           "",
		"policy":                 q.Policy,
	}
	if q.MaxLength > 0 {
		set["x-max-length"] = strconv.Itoa(q.MaxLength)
	}
	if qt == string(profile.QueueStream) {
		return set
	}
	set["x-overflow"] = orS(string(q.Overflow), string(profile.OverflowDropHead))
	if qt == string(profile.QueueQuorum) {
		set["x-dead-letter-strategy"] = orS(string(q.DeadLetterStrategy), string(profile.DLAtMostOnce))
		limit, _ := q.EffectiveDeliveryLimit(version)
		set["x-delivery-limit"] = ""
		if limit > 0 {
			set["x-delivery-limit"] = strconv.Itoa(limit)
		}
	}
	return set
}

// inspectRabbitLack is why BR-6.1 does not apply where no team's server
// is named, in plain words and with how to name one.
const inspectRabbitLack = "certification (BR-6.1) reads a team's own RabbitMQ read-only: the queues a profile declares, their arguments and policies (management API) and consumer_timeout; name the server with tck run --profile FILE --target broker/rabbitmq=amqp://USER:PASSWORD@HOST:5672/VHOST (the management API is read at http://HOST:15672 with the same login, or at ?management=http://HOST:PORT)"

// bindRabbitProfile applies the run's profile to a RabbitMQ target: on a
// server named by address, BR-6.1 reads the declared queues and node
// settings (rabbitmq.Inspect, read only). On the kit's own server the
// declared queues are not there: BR-6.1 is not applicable, saying how to
// name the team's server. Without a profile the kit's own server keeps
// its scratch copy (RabbitBrokerTarget); a server at an address has
// nothing of the team's to compare, and says so.
func bindRabbitProfile(rt *rabbitmq.Target, ref target.Ref, t *BrokerBinding, info *target.Info) error {
	own := ref.Address == ""
	p := ref.Opts.Profile
	lacks := map[string]string{}
	for k, v := range t.Lacks {
		lacks[k] = v
	}
	t.Lacks = lacks
	if p == nil {
		if t.Inspect == nil {
			t.Lacks["inspect"] = inspectRabbitLack + " (without a profile there is nothing of the team's to compare)"
		}
		return nil
	}
	d, err := DeclaredRabbitMQ(p, !own)
	if err != nil || d == nil {
		return err
	}
	if own {
		t.Inspect = nil // the kit's scratch copy is no certification of the team's
		var qs []string
		for _, s := range d.Streams {
			qs = append(qs, s.Topic.Name)
		}
		t.Lacks["inspect"] = fmt.Sprintf("the server is the kit's own, started for this run: the declared queues (%s) are not on it; %s", strings.Join(qs, ", "), inspectRabbitLack)
		info.Notes = append(info.Notes, "the server is the kit's own, not the team's: BR-6.1 does not read the declared RabbitMQ queues; certify the team's server with --target broker/rabbitmq=amqp://USER:PASSWORD@HOST:5672/VHOST")
		return nil
	}
	t.Declared = d
	t.Inspect = rabbitInspect(rt)
	delete(t.Lacks, "inspect")
	t.Progress = ref.Opts.Progress
	t.Budget = DefaultMaxWait
	if ref.Opts.MaxWait > 0 {
		t.Budget = ref.Opts.MaxWait
	}
	for _, s := range d.Streams {
		info.Config["declared queue "+s.Topic.Name] = strings.TrimPrefix(settingsText(s.Topic.Settings), ", ")
	}
	for k, v := range d.Server {
		info.Config["declared "+k] = v + " ms"
	}
	info.Config["profile"] = d.Source
	mg := rt.Management
	if mg == "" {
		mg = "http://HOST:15672 (the default port, with the AMQP login)"
		if strings.HasPrefix(rt.URL, "amqps://") {
			mg = "https://HOST:15671 (the default TLS port, with the AMQP login and the run's TLS material)"
		}
	}
	info.Notes = append(info.Notes, "BR-6.1 reads queue arguments and policies through the management API at "+mg+"; where it does not answer, a passive queue.declare finds each queue and its settings are named unreadable (unknown, never pass)")
	return nil
}

// rabbitInspect opens the read-only view of rt's server.
func rabbitInspect(rt *rabbitmq.Target) func(ctx context.Context) (mq.Inspector, error) {
	url, mgmt, opts := rt.URL, rt.Management, rt.Client.Options
	return func(ctx context.Context) (mq.Inspector, error) { return rabbitmq.Inspect(ctx, url, mgmt, opts) }
}

// withoutInspect is lacks without the capability inspect.
func withoutInspect(lacks map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range lacks {
		if k != "inspect" {
			out[k] = v
		}
	}
	return out
}
