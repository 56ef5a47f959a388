package consumer

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"

	"github.com/onsi/ginkgo/v2"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
)

// errRollback is what the kit's in-transaction hook returns to make a
// writer roll back.
var errRollback = errors.New("onceproof: the kit rolls this transaction back")

// process is one outbox process (writer and relay) on the local database
// file; a crash ends it and the kit opens another on the same file.
type process struct {
	r      *run
	path   string
	n      int
	dead   *atomic.Bool
	writer co.OutboxWriter
	relay  co.OutboxRelay
	close  func() error
}

func (p *process) open(ctx context.Context) {
	p.n++
	dead := &atomic.Bool{}
	pub := &kitPublisher{r: p.r, dead: dead, name: fmt.Sprintf("outbox#%d", p.n)}
	w, rl, closeFn, err := p.r.t.Outbox(ctx, p.path, pub, p.r.topic)
	if err != nil {
		spec.Unknown("opening the outbox: %v", err)
	}
	if closeFn == nil {
		closeFn = func() error { return nil }
	}
	p.dead, p.writer, p.relay, p.close = dead, w, rl, closeFn
	p.r.rec.Note(pub.name, "start", "", "writer and relay opened on "+filepath.Base(p.path))
}

// call runs f as the outbox process would; a kit crash inside ends the
// process and opens a new one on the same file.
func (p *process) call(ctx context.Context, what string, f func() error) (err error) {
	defer func() {
		if x := recover(); x != nil {
			c, ok := x.(crash)
			if !ok {
				panic(x)
			}
			p.r.rec.Note(fmt.Sprintf("outbox#%d", p.n), "crashed", c.Event, what+": "+c.String())
			p.dead.Store(true)
			_ = p.close()
			p.open(ctx)
			err = errCrashed
		}
	}()
	return f()
}

var errCrashed = errors.New("crashed")

type kitPublisher struct {
	r    *run
	dead *atomic.Bool
	name string
}

func (k *kitPublisher) Publish(ctx context.Context, topic string, m mq.Message) (mq.PublishAck, error) {
	if k.dead.Load() {
		panic(crash{Stale: true})
	}
	e, err := co.Decode(m.Payload)
	if err != nil {
		return mq.PublishAck{}, err
	}
	if k.r.shouldCrash(BeforePub, e.EventID, "") {
		k.r.rec.Note(k.name, "crash", e.EventID, "before publish")
		panic(crash{Point: BeforePub, Event: e.EventID})
	}
	k.r.track(m.ID, e)
	op := k.r.rec.Invoke(k.name, "publish", m.ID)
	ack, err := k.r.broker.Publish(ctx, topic, m)
	switch {
	case err != nil:
		op.Info(err.Error())
	case ack.Duplicate:
		op.OK("dropped by the broker as a duplicate")
	default:
		op.OK("at " + ack.Position)
	}
	if k.r.shouldCrash(AfterPub, e.EventID, "") {
		k.r.rec.Note(k.name, "crash", e.EventID, "after publish")
		panic(crash{Point: AfterPub, Event: e.EventID})
	}
	return ack, err
}

func registerOutbox(s *spec.Set, t Target) {
	s.It("CO-4.1", func(ctx context.Context, ev *verdict.Evidence) {
		r := newRun(newHarness(ctx, t, "CO-4.1", ev, workers))
		p := &process{r: r, path: filepath.Join(r.dir, "outbox.db")}
		p.open(ctx)
		ginkgo.DeferCleanup(func() { _ = p.close() })

		before, after, rolled := co.NewEvent("m-41", 1), co.NewEvent("m-42", 1), co.NewEvent("m-43", 1)
		cases := []struct {
			e  co.Event
			pt Point
		}{{before, BeforePub}, {after, AfterPub}}
		for _, c := range cases {
			r.arm(plan{Point: c.pt, Event: c.e.EventID})
			err := p.call(ctx, "submit", func() error { return p.writer.Submit(ctx, c.e, nil) })
			if err != nil && !errors.Is(err, errCrashed) {
				spec.Unknown("submitting %s failed: %v", c.e.EventID, err)
			}
			// The relay runs, and after a crash runs again in the new process.
			for i := 0; i < 2; i++ {
				_ = p.call(ctx, "relay", func() error { _, err := p.relay.RelayOnce(ctx); return err })
			}
		}
		err := p.call(ctx, "submit", func() error {
			return p.writer.Submit(ctx, rolled, func() error { return errRollback })
		})
		if err == nil {
			ev.Hazard("Submit returned no error for a transaction the kit rolled back")
		}
		_ = p.call(ctx, "relay", func() error { _, err := p.relay.RelayOnce(ctx); return err })
		r.settle()

		stored, err := r.broker.ReadAll(ctx, r.topic)
		if err != nil {
			spec.Unknown("reading the topic back: %v", err)
		}
		copies := map[string]int{}
		for _, st := range stored {
			if e, err := co.Decode(st.Message.Payload); err == nil {
				copies[e.EventID]++
			}
		}
		for _, c := range cases {
			ev.Figure("stored copies of "+c.e.EventID+" (crash "+string(c.pt)+")", copies[c.e.EventID], "")
		}
		ev.Figure("stored copies of "+rolled.EventID+" (rolled back)", copies[rolled.EventID], "")
		ev.Figure("fired crashes", r.fired(before.EventID)+r.fired(after.EventID), "")
		if copies[rolled.EventID] > 0 {
			ginkgo.Fail(fmt.Sprintf("%s was published although its transaction was rolled back", rolled.EventID))
		}
		for _, c := range cases {
			if copies[c.e.EventID] == 0 {
				r.ev.Smallest(opsAbout(r.rec.Ops(), c.e.MessageID))
				ginkgo.Fail(fmt.Sprintf("%s never reached the broker: a crash %s lost it after the commit", c.e.EventID, c.pt))
			}
			r.model.Apply(c.e)
		}
		r.expectModel("events relayed through the outbox across crashes")
		ev.Notef("both events arrived after crashes around the publish and took effect once; the rolled-back one was never published")
	})
}
