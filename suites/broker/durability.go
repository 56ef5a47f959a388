package broker

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/mq"
)

// durableBatch is how many acknowledged publishes BR-3.1 checks per restart.
const durableBatch = 100

func registerDurability(p *plan) {
	none := func(Windows, mq.Capabilities) time.Duration { return 0 }
	p.add("BR-1.7", none, dedupeAfterRestart)
	p.add("BR-3.1", none, survivesRestart)
}

// private starts the rule's own server and opens a handle on it.
func (f *fixture) private() (Server, mq.Broker, error) {
	h := f.rec.Invoke("kit", "start-server", "a broker of the rule's own")
	srv, err := f.t.Private(f.ctx)
	if err != nil {
		h.Fail(err.Error())
		return nil, nil, err
	}
	h.OK("")
	f.defer_(func() { _ = srv.Stop() })
	b, err := srv.Open(f.ctx)
	if err != nil {
		return nil, nil, err
	}
	f.defer_(func() { _ = b.Close() })
	return srv, b, nil
}

func (f *fixture) restart(srv Server, how Restart) error {
	h := f.rec.Invoke("kit", "restart", string(how))
	err := srv.Restart(f.ctx, how)
	if err != nil {
		h.Fail(err.Error())
	} else {
		h.OK("")
	}
	return err
}

// dedupeAfterRestart is BR-1.7: publish an id on a limits topic and on a
// work-queue topic (there acked, so removed), restart the broker gracefully
// inside the window, and retry both ids.
func dedupeAfterRestart(f *fixture) judge {
	W, tol := window(f.t.Caps), f.w.Tolerance
	srv, b, err := f.private()
	if err != nil {
		return f.failed(err, "starting a broker of the rule's own")
	}
	type row struct {
		r        mq.Retention
		topic    string
		id       string
		survived bool
		err      error
	}
	var rows []*row
	for _, r := range []mq.Retention{mq.Limits, mq.WorkQueue} {
		if !slices.Contains(f.t.Caps.Retentions, r) {
			f.ev.Notef("%s retention not measured: the target does not declare it", r)
			continue
		}
		topic, err := f.topicOn(b, string(r), mq.TopicConfig{DedupeWindow: W, Retention: r})
		if err != nil {
			return f.failed(err, "creating a topic")
		}
		rows = append(rows, &row{r: r, topic: topic, id: f.name(string(r))})
	}
	t0 := time.Now()
	for _, rw := range rows {
		if _, err := f.publishOn(f.ctx, b, "producer", rw.topic, mq.Message{ID: rw.id, Payload: []byte(rw.id)}); err != nil {
			return f.failed(err, "first publish")
		}
		if rw.r == mq.WorkQueue {
			c, err := b.Consumer(f.ctx, rw.topic, mq.ConsumerConfig{Group: f.name("g"), AckWait: f.w.AckWait})
			if err != nil {
				return f.failed(err, "opening a consumer")
			}
			d, err := f.next("member-1", c, time.Now().Add(f.w.AckWait))
			if err != nil || d == nil {
				return f.failed(fmt.Errorf("no delivery: %v", err), "consuming the work-queue message")
			}
			if err := f.settle("member-1", "ack", d.d, d.d.Ack); err != nil {
				return f.failed(err, "acking the work-queue message")
			}
			_ = c.Close()
		}
	}
	if err := f.restart(srv, Graceful); err != nil {
		return f.failed(err, "restarting the broker")
	}
	restarted := time.Since(t0)
	for _, rw := range rows {
		_, rw.err = f.publishOn(f.ctx, b, "producer", rw.topic, mq.Message{ID: rw.id, Payload: []byte(rw.id)})
		if rw.err != nil {
			continue
		}
		n, err := f.intentsOn(b, rw.topic, rw.id)
		rw.err = err
		// Limits keeps the first copy (dropped retry: 1); the work queue
		// removed it on ack (dropped retry: 0).
		want := 1
		if rw.r == mq.WorkQueue {
			want = 0
		}
		rw.survived = n == want
	}
	retried := time.Since(t0)
	f.ev.Figure("declared window", W.Seconds(), "s")
	f.ev.Figure("retried after", retried.Seconds(), "s")
	f.ev.Figure("restart done after", restarted.Seconds(), "s")
	return func(r *spec.R) {
		if retried > W-tol {
			r.Unknown("the retry came %.2fs after the first publish, not inside the window %s (the restart took %.2fs)", retried.Seconds(), W, restarted.Seconds())
		}
		for _, rw := range rows {
			r.Expect(rw.err).NotTo(gomega.HaveOccurred(), "%s retention: retrying after the restart (the topic must survive a graceful restart)", rw.r)
			declared := slices.Contains(f.t.Caps.DedupeAfterRestart, rw.r)
			r.Ev.Figure(fmt.Sprintf("%s: de-dupe survives restart (measured)", rw.r), rw.survived, "")
			r.Ev.Figure(fmt.Sprintf("%s: de-dupe survives restart (declared)", rw.r), declared, "")
			r.Ev.Notef("%s retention: the same id retried %.2fs after the first publish, after a graceful restart, was %s (declared: %s)",
				rw.r, retried.Seconds(), droppedOr(rw.survived), droppedOr(declared))
			if !rw.survived {
				r.Ev.Hazard("under %s retention the broker forgets a message id across a restart inside the de-dupe window: a producer retry then stores the intent again", rw.r)
			}
		}
		for _, rw := range rows {
			declared := slices.Contains(f.t.Caps.DedupeAfterRestart, rw.r)
			r.Expect(rw.survived).To(gomega.Equal(declared), "%s retention: whether the de-dupe state survives a restart inside the window (measured; want = declared)", rw.r)
		}
	}
}

func droppedOr(dropped bool) string {
	if dropped {
		return "dropped as a duplicate"
	}
	return "stored again"
}

// survivesRestart is BR-3.1: every acknowledged publish is readable after a
// graceful restart and, where the target can do it, an abrupt one; the
// server's sync setting is read and named.
func survivesRestart(f *fixture) judge {
	srv, b, err := f.private()
	if err != nil {
		return f.failed(err, "starting a broker of the rule's own")
	}
	topic, err := f.topicOn(b, "t", mq.TopicConfig{Retention: mq.Limits})
	if err != nil {
		return f.failed(err, "creating the topic")
	}
	setting, lossy, syncErr := srv.Sync(f.ctx)
	// Each acknowledged publish and, after a restart, each missing one: the
	// history a failure's smallest history is cut from.
	pubs := history.New()
	type round struct {
		how     Restart
		acked   []string
		missing []string
		err     error
		readErr error
		skipped string
	}
	var rounds []*round
	for _, how := range []Restart{Graceful, Abrupt} {
		rd := &round{how: how}
		rounds = append(rounds, rd)
		for i := 0; i < durableBatch; i++ {
			id := fmt.Sprintf("%s-%s-%03d", topic, how, i)
			h := pubs.Invoke("producer", "publish", id)
			if _, err := b.Publish(f.ctx, topic, mq.Message{ID: id, Payload: []byte(id)}); err != nil {
				// The topic is gone or the server is down: more publishes
				// would only wait out their own timeouts.
				h.Info(err.Error())
				f.rec.Note("producer", "publish", id, "error: "+err.Error())
				break
			}
			h.OK("")
			rd.acked = append(rd.acked, id)
		}
		f.rec.Note("producer", "publish", fmt.Sprintf("%d messages", durableBatch), fmt.Sprintf("%d acked", len(rd.acked)))
		if err := f.restart(srv, how); err != nil {
			if errors.Is(err, mq.ErrUnsupported) {
				rd.skipped = err.Error()
				continue
			}
			rd.err = err
			continue
		}
		h := f.rec.Invoke("checker", "read-all", topic)
		all, err := b.ReadAll(f.ctx, topic)
		if err != nil {
			// A topic that cannot be read after the restart holds none of
			// what was acknowledged on it.
			h.Info(err.Error())
			rd.missing = rd.acked
			rd.readErr = err
			continue
		}
		h.OK(fmt.Sprintf("%d stored", len(all)))
		have := map[string]bool{} // by payload, which carries the id the kit sent
		for _, s := range all {
			have[string(s.Message.Payload)] = true
		}
		for _, id := range rd.acked {
			if !have[id] {
				rd.missing = append(rd.missing, id)
				pubs.Invoke("checker", "missing", id).Fail("acknowledged before the restart, not stored after it")
			}
		}
	}
	ops := pubs.Ops()
	return func(r *spec.R) {
		if syncErr != nil {
			r.Ev.Notef("the server's sync setting could not be read: %v", syncErr)
		} else {
			r.Ev.Figure("sync setting", setting, "")
			if lossy {
				r.Ev.Hazard("the server's %s lets the OS hold acknowledged writes unsynced: a power loss (not a process crash) can lose acknowledged publishes; set sync_interval: always where that matters", setting)
			}
		}
		measured := 0
		for _, rd := range rounds {
			if rd.skipped != "" {
				r.Ev.Notef("%s restart not measured: %s", rd.how, rd.skipped)
				continue
			}
			r.Expect(rd.err).NotTo(gomega.HaveOccurred(), "%s restart", rd.how)
			measured++
			r.Ev.Figure(fmt.Sprintf("%s restart: acked", rd.how), len(rd.acked), "")
			r.Ev.Figure(fmt.Sprintf("%s restart: missing", rd.how), len(rd.missing), "")
			r.Ev.Notef("%s restart: %d acknowledged publishes, %d missing afterwards", rd.how, len(rd.acked), len(rd.missing))
			if rd.readErr != nil {
				r.Ev.Notef("%s restart: reading the topic back failed: %v", rd.how, rd.readErr)
			}
			if len(rd.missing) > 0 {
				r.Ev.Smallest(smallest(ops, rd.missing, 10))
			}
			r.Expect(rd.acked).NotTo(gomega.BeEmpty(), "%s restart: no publish was acknowledged before it", rd.how)
			r.Expect(len(rd.missing)).To(gomega.BeZero(), "acknowledged publishes must survive a %s restart: %d of %d missing (read-back error: %v)",
				rd.how, len(rd.missing), len(rd.acked), rd.readErr)
		}
		if measured == 0 {
			r.Unknown("no restart could be measured")
		}
	}
}
