package consumer

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/mq"
)

// The kit's wrappers are all a consumer instance sees of the broker and the
// sinks. Each records its call in the history and is a place where the kit
// can end the instance (instance.at), before and after the real call.

// kitDelivery is a delivery as the consumer sees it: its ack may be lost by
// the kit or crash around it.
type kitDelivery struct {
	inst     *instance
	d        mq.Delivery
	e        co.Event
	brokerID string
	settled  atomic.Bool
}

func (k *kitDelivery) Event() co.Event { return k.e }
func (k *kitDelivery) Attempt() int    { return k.d.Attempt() }

func (k *kitDelivery) Ack(ctx context.Context) error {
	h, inst := k.inst.h, k.inst
	inst.at(beforeAck, k.e.EventID, "")
	k.settled.Store(true)
	if h.takeLostAck(k.e.EventID) {
		h.rec.Note(inst.name, "ack", k.brokerID, "lost by the kit: the broker never sees it")
	} else {
		op := h.rec.Invoke(inst.name, "ack", k.brokerID)
		if err := k.d.Ack(ctx); err != nil {
			op.Info(err.Error())
			inst.at("", "", "")
			return err
		}
		op.OK("confirmed")
		h.markAcked(k.brokerID)
	}
	inst.at(afterAck, k.e.EventID, "")
	return nil
}

func (k *kitDelivery) Nak(ctx context.Context, delay time.Duration) error {
	k.inst.at("", "", "")
	k.settled.Store(true)
	k.inst.h.rec.Note(k.inst.name, "nak", k.brokerID, "delay "+delay.String()+" (seed time)")
	return k.d.Nak(ctx, k.inst.h.clock.Real(delay))
}

// kitIndex is the kit's index behind an instance's crash points.
type kitIndex struct{ inst *instance }

func (x *kitIndex) write(action string, doc co.Doc, f func() (bool, error)) (bool, error) {
	h, ev := x.inst.h, co.EventID(doc.ID, doc.Version)
	x.inst.at(beforeEffect, ev, co.ScopeIndex)
	op := h.rec.Invoke(x.inst.name, action, ev)
	applied, err := f()
	switch {
	case err != nil:
		op.Info(err.Error())
	case applied:
		op.OK("written")
	default:
		op.OK("not applied")
	}
	x.inst.at(afterEffect, ev, co.ScopeIndex)
	return applied, err
}

func (x *kitIndex) Put(ctx context.Context, doc co.Doc) error {
	_, err := x.write("index put", doc, func() (bool, error) { return true, x.inst.h.index.Put(ctx, doc) })
	return err
}

func (x *kitIndex) Upsert(ctx context.Context, doc co.Doc) (bool, error) {
	return x.write("index upsert", doc, func() (bool, error) { return x.inst.h.index.Upsert(ctx, doc) })
}

func (x *kitIndex) Get(ctx context.Context, id string) (co.Doc, bool, error) {
	x.inst.at("", "", "")
	return x.inst.h.index.Get(ctx, id)
}

// kitNotifier is the kit's notifier behind an instance's crash points.
type kitNotifier struct{ inst *instance }

func (n *kitNotifier) Send(ctx context.Context, msg co.Notification) error {
	h, ev := n.inst.h, co.EventID(msg.MessageID, msg.Version)
	n.inst.at(beforeEffect, ev, co.ScopeNotify)
	op := h.rec.Invoke(n.inst.name, "notify", ev)
	err := h.notifier.Send(ctx, msg)
	if err != nil {
		op.Info(err.Error())
	} else {
		op.OK("sent")
	}
	n.inst.at(afterEffect, ev, co.ScopeNotify)
	return err
}

func (n *kitNotifier) Sent(ctx context.Context, messageID string, version int) (int, error) {
	n.inst.at("", "", "")
	return n.inst.h.notifier.Sent(ctx, messageID, version)
}

// kitStore passes through to the instance's own handle; an ended instance
// can no longer read or write.
type kitStore struct{ inst *instance }

func (s *kitStore) Get(ctx context.Context, key string) (co.Record, bool, error) {
	s.inst.at("", "", "")
	return s.inst.store.Get(ctx, key)
}

func (s *kitStore) Insert(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	s.inst.at("", "", "")
	return s.inst.store.Insert(ctx, key, value, ttl)
}

func (s *kitStore) Put(ctx context.Context, key, value string, ttl time.Duration) error {
	s.inst.at("", "", "")
	return s.inst.store.Put(ctx, key, value, ttl)
}

func (s *kitStore) CompareAndSwap(ctx context.Context, key, old, value string, ttl time.Duration) (bool, error) {
	s.inst.at("", "", "")
	return s.inst.store.CompareAndSwap(ctx, key, old, value, ttl)
}

func (s *kitStore) Delete(ctx context.Context, key string) error {
	s.inst.at("", "", "")
	return s.inst.store.Delete(ctx, key)
}
