package consumer

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/mq"
)

// registerOutbox registers CO-4.1: the outbox process crashes just before
// and just after a publish, and a rolled-back transaction is never published.
func registerOutbox(s *spec.Set, t Target) {
	s.It("CO-4.1", func(r *spec.R) {
		ctx := r.Context()
		h := openInproc(r, t, openOpts{})
		p := &process{h: h, path: filepath.Join(h.dir, "outbox.db")}
		p.open(ctx)
		r.DeferCleanup(func() { _ = p.close() })

		before, after, rolled := h.event("m-41", 1), h.event("m-42", 1), h.event("m-43", 1)
		cases := []struct {
			e  co.Event
			pt point
		}{{before, beforePub}, {after, afterPub}}
		for _, c := range cases {
			h.arm(tripwire{point: c.pt, event: c.e.EventID})
			err := p.call(ctx, "submit", func() error { return p.writer.Submit(ctx, c.e, nil) })
			if err != nil && !errors.Is(err, errCrashed) {
				r.Unknown("submitting %s failed: %v", c.e.EventID, err)
			}
			// The relay runs, and after a crash runs again in the new process.
			for range 2 {
				_ = p.call(ctx, "relay", func() error { _, err := p.relay.RelayOnce(ctx); return err })
			}
		}
		err := p.call(ctx, "submit", func() error {
			return p.writer.Submit(ctx, rolled, func() error { return errRollback })
		})
		if err == nil {
			r.Ev.Hazard("Submit returned no error for a transaction the kit rolled back")
		}
		_ = p.call(ctx, "relay", func() error { _, err := p.relay.RelayOnce(ctx); return err })
		h.settle()

		stored, err := h.broker.ReadAll(ctx, h.topic)
		if err != nil {
			r.Unknown("reading the topic back: %v", err)
		}
		copies := map[string]int{}
		for _, st := range stored {
			if e, err := co.Decode(st.Message.Payload); err == nil {
				copies[e.EventID]++
			}
		}
		for _, c := range cases {
			r.Ev.Figure("stored copies of "+c.e.EventID+" (crash "+string(c.pt)+")", copies[c.e.EventID], "")
		}
		r.Ev.Figure("stored copies of "+rolled.EventID+" (rolled back)", copies[rolled.EventID], "")
		r.Ev.Figure("fired crashes", h.fired(before.EventID)+h.fired(after.EventID), "")
		r.Expect(copies[rolled.EventID]).To(gomega.BeZero(), "%s was published although its transaction was rolled back", rolled.EventID)
		for _, c := range cases {
			if copies[c.e.EventID] == 0 {
				r.Ev.Smallest(opsAbout(h.rec.Ops(), c.e.MessageID))
			}
			r.Expect(copies[c.e.EventID]).NotTo(gomega.BeZero(), "%s never reached the broker: a crash %s lost it after the commit", c.e.EventID, c.pt)
			h.model.apply(c.e)
		}
		h.expectModel("events relayed through the outbox across crashes")
		r.Ev.Notef("both events arrived after crashes around the publish and took effect once; the rolled-back one was never published")
	})
}

// errRollback is what the kit's in-transaction hook returns to make a
// writer roll back.
var errRollback = errors.New("onceproof: the kit rolls this transaction back")

// errCrashed is what process.call returns when the kit ended the process.
var errCrashed = errors.New("crashed")

// process is one outbox process (writer and relay) on the local database
// file; a crash ends it and the kit opens another on the same file.
type process struct {
	h      *inproc
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
	pub := &kitPublisher{h: p.h, dead: dead, name: fmt.Sprintf("outbox#%d", p.n)}
	w, rl, closeFn, err := p.h.t.Outbox(ctx, p.path, pub, p.h.topic)
	if err != nil {
		p.h.r.Unknown("opening the outbox: %v", err)
	}
	if closeFn == nil {
		closeFn = func() error { return nil }
	}
	p.dead, p.writer, p.relay, p.close = dead, w, rl, closeFn
	p.h.rec.Note(pub.name, "start", "", "writer and relay opened on "+filepath.Base(p.path))
}

// call runs f as the outbox process would; a kit crash inside (the
// publisher refuses every call from then on) ends the process and opens a
// new one on the same file.
func (p *process) call(ctx context.Context, what string, f func() error) error {
	err := f()
	if !p.dead.Load() {
		return err
	}
	p.h.rec.Note(fmt.Sprintf("outbox#%d", p.n), "crashed", "", what+" ended by the kit")
	_ = p.close()
	p.open(ctx)
	return errCrashed
}

// kitPublisher is the broker as an outbox process sees it, with crash
// points just before and just after the publish. A crash refuses the call
// (co.ErrEnded) and every later one; it does not panic. What the outbox
// does with its own database after a refused publish is not the kit's to
// refuse: the process is closed when the call returns.
type kitPublisher struct {
	h    *inproc
	dead *atomic.Bool
	name string
}

func (k *kitPublisher) Publish(ctx context.Context, topic string, m mq.Message) (mq.PublishAck, error) {
	h := k.h
	if k.dead.Load() {
		h.rec.Note(k.name, "after death", m.ID, "publish refused")
		return mq.PublishAck{}, co.ErrEnded
	}
	e, err := co.Decode(m.Payload)
	if err != nil {
		return mq.PublishAck{}, err
	}
	if h.trip(beforePub, e.EventID, "", 0) {
		h.crashed()
		k.dead.Store(true)
		h.rec.Note(k.name, "crash", e.EventID, "before publish")
		return mq.PublishAck{}, co.ErrEnded
	}
	h.track(m.ID, e)
	op := h.rec.Invoke(k.name, "publish", m.ID)
	ack, err := h.broker.Publish(ctx, topic, m)
	switch {
	case err != nil:
		op.Info(err.Error())
	case ack.Duplicate:
		op.OK("dropped by the broker as a duplicate")
	default:
		op.OK("at " + ack.Position)
	}
	if h.trip(afterPub, e.EventID, "", 0) {
		h.crashed()
		k.dead.Store(true)
		h.rec.Note(k.name, "crash", e.EventID, "after publish")
		return mq.PublishAck{}, co.ErrEnded
	}
	return ack, err
}
