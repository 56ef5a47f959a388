package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
)

// fixture is one rule's workload: its broker handle, its own topics, its
// timeline, and the evidence it gathers before the spec judges it.
type fixture struct {
	ctx  context.Context
	t    Target
	w    Windows
	rule string
	b    mq.Broker
	rec  *history.Recorder
	ev   *verdict.Evidence // merged into the spec's evidence when judged

	cleanups []func()
}

func newFixture(ctx context.Context, t Target, rule string) *fixture {
	return &fixture{ctx: ctx, t: t, w: t.Windows, rule: rule, rec: history.New(), ev: &verdict.Evidence{}}
}

func (f *fixture) open() error {
	b, err := f.t.Open(f.ctx)
	if err != nil {
		return err
	}
	f.b = b
	f.defer_(func() { _ = b.Close() })
	return nil
}

// defer_ registers a cleanup, run last-in first-out when the workload ends.
func (f *fixture) defer_(fn func()) { f.cleanups = append(f.cleanups, fn) }

func (f *fixture) cleanup() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

// merge copies the workload's evidence into the spec's.
func (f *fixture) merge(ev *verdict.Evidence) {
	s := f.ev.Snapshot()
	for _, fig := range s.Figures {
		ev.Figure(fig.Name, fig.Value, fig.Unit)
	}
	for _, n := range s.Notes {
		ev.Notef("%s", n)
	}
	for _, h := range s.Hazards {
		ev.Hazard("%s", h)
	}
	if len(s.Minimal) > 0 {
		ev.Smallest(s.Minimal)
	}
	if ops := f.rec.Ops(); len(ops) > 0 {
		ev.Record(ops)
	}
}

// failed is the judge of a workload that could not do its job.
func (f *fixture) failed(err error, what string) judge {
	return func() {
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "%s: %s", f.rule, what)
	}
}

func nonce() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// name is unique to the rule, the label and this run.
func (f *fixture) name(label string) string {
	return strings.ReplaceAll(strings.ToLower(f.rule), ".", "_") + "-" + label + "-" + nonce()
}

// topic creates a topic of the rule's own on b and deletes it afterwards.
func (f *fixture) topicOn(b mq.Broker, label string, cfg mq.TopicConfig) (string, error) {
	name := f.name(label)
	h := f.rec.Invoke("kit", "create-topic", fmt.Sprintf("%s %s window=%s", name, cfg.Retention, cfg.DedupeWindow))
	if err := b.CreateTopic(f.ctx, name, cfg); err != nil {
		h.Fail(err.Error())
		return "", err
	}
	h.OK("")
	f.defer_(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = b.DeleteTopic(ctx, name)
	})
	return name, nil
}

func (f *fixture) topic(label string, cfg mq.TopicConfig) (string, error) {
	return f.topicOn(f.b, label, cfg)
}

// publishOn publishes and records the operation: ok with the position (and
// "duplicate" when the broker says so), info when the outcome is unknown.
func (f *fixture) publishOn(ctx context.Context, b mq.Broker, actor, topic string, m mq.Message) (mq.PublishAck, error) {
	h := f.rec.Invoke(actor, "publish", fmt.Sprintf("%s id=%s %q", topic, m.ID, m.Payload))
	ack, err := b.Publish(ctx, topic, m)
	if err != nil {
		h.Info(err.Error())
		return ack, err
	}
	h.OK(describeAck(ack))
	return ack, nil
}

func (f *fixture) publish(actor, topic string, m mq.Message) (mq.PublishAck, error) {
	return f.publishOn(f.ctx, f.b, actor, topic, m)
}

func describeAck(a mq.PublishAck) string {
	if a.Duplicate {
		return "pos=" + a.Position + " duplicate"
	}
	return "pos=" + a.Position + " stored"
}

// copies counts the stored messages with id, and returns their payloads.
func (f *fixture) copiesOn(b mq.Broker, topic, id string) (int, []string, error) {
	h := f.rec.Invoke("checker", "read-all", topic)
	all, err := b.ReadAll(f.ctx, topic)
	if err != nil {
		h.Info(err.Error())
		return 0, nil, err
	}
	var payloads []string
	for _, s := range all {
		if s.Message.ID == id {
			payloads = append(payloads, string(s.Message.Payload))
		}
	}
	h.OK(fmt.Sprintf("%d stored, %d with id %s", len(all), len(payloads), id))
	return len(payloads), payloads, nil
}

func (f *fixture) copies(topic, id string) (int, []string, error) {
	return f.copiesOn(f.b, topic, id)
}

// intentsOn counts the stored copies of one intent, known by its payload:
// a producer that changes the id on a retry stores copies under other ids,
// and they are copies all the same.
func (f *fixture) intentsOn(b mq.Broker, topic, payload string) (int, error) {
	h := f.rec.Invoke("checker", "read-all", topic)
	all, err := b.ReadAll(f.ctx, topic)
	if err != nil {
		h.Info(err.Error())
		return 0, err
	}
	n := 0
	for _, s := range all {
		if string(s.Message.Payload) == payload {
			n++
		}
	}
	h.OK(fmt.Sprintf("%d stored, %d of intent %q", len(all), n, payload))
	return n, nil
}

func (f *fixture) intents(topic, payload string) (int, error) {
	return f.intentsOn(f.b, topic, payload)
}

// consumer opens a member of group on topic.
func (f *fixture) consumer(topic, group string, cfg mq.ConsumerConfig) (mq.Consumer, error) {
	cfg.Group = group
	h := f.rec.Invoke("kit", "open-consumer", fmt.Sprintf("%s group=%s ackWait=%s maxDeliver=%d", topic, group, cfg.AckWait, cfg.MaxDeliver))
	c, err := f.b.Consumer(f.ctx, topic, cfg)
	if err != nil {
		h.Fail(err.Error())
		return nil, err
	}
	h.OK("")
	f.defer_(func() { _ = c.Close() })
	return c, nil
}

// delivered is one delivery and the moment the kit had it.
type delivered struct {
	d  mq.Delivery
	at time.Time
}

// next fetches until one delivery arrives or until deadline; nil when none.
func (f *fixture) next(actor string, c mq.Consumer, deadline time.Time) (*delivered, error) {
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		if left > time.Second {
			left = time.Second
		}
		ds, err := c.Fetch(f.ctx, 1, left)
		if err != nil {
			if f.ctx.Err() != nil {
				return nil, err
			}
			f.rec.Note(actor, "fetch", "", "error: "+err.Error())
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if len(ds) > 0 {
			d := ds[0]
			at := time.Now()
			f.rec.Note(actor, "deliver", "id="+d.Message().ID, fmt.Sprintf("attempt=%d pos=%s", d.Attempt(), d.Position()))
			return &delivered{d: d, at: at}, nil
		}
	}
}

// settle records one of ack, nak, term, in-progress.
func (f *fixture) settle(actor, action string, d mq.Delivery, do func(context.Context) error) error {
	h := f.rec.Invoke(actor, action, "id="+d.Message().ID)
	if err := do(f.ctx); err != nil {
		h.Info(err.Error())
		return err
	}
	h.OK("")
	return nil
}

// sleepUntil waits for t (or the end of the workload).
func (f *fixture) sleepUntil(t time.Time) {
	select {
	case <-time.After(time.Until(t)):
	case <-f.ctx.Done():
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// ctxT keeps the settle closures of the delivery rules on one line.
type ctxT = context.Context
