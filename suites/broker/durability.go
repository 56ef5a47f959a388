package broker

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/mq"
)

// restartFactor is BR-1.7's margin over one measured restart when it
// chooses its test window: restarts vary (a container's took 1.5-2.1 s in
// a row), and the retry also waits for a publish and a consume.
const restartFactor = 3.0

// durableBatch is how many acknowledged publishes BR-3.1 checks per restart.
const durableBatch = 100

// ownServerSetUp is the time BR-1.7 and BR-3.1 get on top of the rule's
// deadline for the kit to start a server of the rule's own and restart it
// twice: their outcome does not hang on the clock (a restart's length only
// sizes BR-1.7's window), and an Erlang node beside two CPU burners and
// other test binaries took over a minute for the three boots.
const ownServerSetUp = 2 * time.Minute

func registerDurability(p *plan) {
	none := func(kithooks.Windows, mq.Capabilities) time.Duration { return 0 }
	if p.set.SetUp == nil {
		p.set.SetUp = map[string]time.Duration{}
	}
	p.set.SetUp["BR-1.7"], p.set.SetUp["BR-3.1"] = ownServerSetUp, ownServerSetUp
	p.set.Background("BR-1.7", p.workload("BR-1.7", none, dedupeAfterRestart))
	p.set.Background("BR-3.1", p.workload("BR-3.1", none, survivesRestart))
}

// private starts the rule's own server and opens a handle on it.
// Starting it, opening a handle on it and restarting it are the kit's
// set-up: their errors make the rule unknown (see setupError).
func (f *fixture) private() (kithooks.Server, mq.Broker, error) {
	var srv kithooks.Server
	if err := f.kitStep("start-server", "a broker of the rule's own", func() (err error) {
		srv, err = f.t.Private(f.ctx)
		return err
	}); err != nil {
		return nil, nil, err
	}
	f.defer_(func() { _ = srv.Stop() })
	var b mq.Broker
	if err := f.kitStep("open-broker", "on the rule's own server", func() (err error) {
		b, err = srv.Open(f.ctx)
		return err
	}); err != nil {
		return nil, nil, err
	}
	f.defer_(func() { _ = b.Close() })
	return srv, b, nil
}

// restart restarts the rule's own server and returns how long it took. An
// unsupported kind is returned as is (wrapping mq.ErrUnsupported), any
// other failure as the kit's (setupError).
func (f *fixture) restart(srv kithooks.Server, how kithooks.Restart) (time.Duration, error) {
	t0 := time.Now()
	var unsupported error
	err := f.kitStep("restart", string(how)+" restart of the rule's own server", func() error {
		err := srv.Restart(f.ctx, how)
		if errors.Is(err, mq.ErrUnsupported) {
			unsupported = err
		}
		return err
	})
	if unsupported != nil {
		return 0, unsupported
	}
	return time.Since(t0), err
}

// dedupeAfterRestart is BR-1.7: publish an id on a limits topic and on a
// work-queue topic (there acked, so removed), restart the broker gracefully
// inside the window, and retry both ids.
//
// The retry must come inside the window, and a restart can take seconds (a
// container: 1.5-2.1 s), so the window is chosen, not fixed: the run's
// Windows.RestartWindow when set, else max(declared window, restartFactor x
// one restart of the rule's own server measured first, on an empty
// server). The evidence gives the figures and which choice was made.
func dedupeAfterRestart(f *fixture) judge {
	f.notTimed() // the judge checks when the retry came itself
	tol := f.w.Tolerance
	srv, b, err := f.private()
	if err != nil {
		return f.failed(err, "starting a broker of the rule's own")
	}
	W, why := f.w.RestartWindow, "set by the run (Windows.RestartWindow)"
	if W <= 0 {
		d, err := f.restart(srv, kithooks.Graceful)
		if err != nil {
			return f.failed(err, "measuring one restart of the rule's own server, to choose the window")
		}
		f.ev.Figure("measured restart (before the test)", d.Seconds(), "s")
		W = max(window(f.t.Caps), time.Duration(restartFactor*float64(d)).Round(100*time.Millisecond))
		why = fmt.Sprintf("max(declared window %s, %g x measured restart %.2fs)", window(f.t.Caps), restartFactor, d.Seconds())
	}
	f.ev.Figure("chosen window", W.Seconds(), "s")
	f.ev.Notef("test window %s: %s", W, why)
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
				return f.failed(unsure("opening a consumer", err), "opening a consumer")
			}
			d, err := f.next("member-1", c, time.Now().Add(f.w.AckWait))
			if err != nil || d == nil {
				return f.failed(noDelivery("no delivery", err), "consuming the work-queue message")
			}
			if err := f.settle("member-1", "ack", d.d, d.d.Ack); err != nil {
				return f.failed(err, "acking the work-queue message")
			}
			_ = c.Close()
		}
	}
	took, err := f.restart(srv, kithooks.Graceful)
	if err != nil {
		return f.failed(err, "restarting the broker")
	}
	restarted := time.Since(t0)
	f.ev.Figure("restart took", took.Seconds(), "s")
	for _, rw := range rows {
		_, rw.err = f.publishOn(f.ctx, b, "producer", rw.topic, mq.Message{ID: rw.id, Payload: []byte(rw.id)})
		if rw.err != nil {
			// Unknown, unless the broker says the topic is gone: then
			// it did not survive the restart, a definite answer.
			if _, err := b.ReadAll(f.ctx, rw.topic); errors.Is(err, mq.ErrNotFound) {
				rw.err = fmt.Errorf("the topic is gone after the restart: %v", err)
			}
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
	f.ev.Figure("declared window", window(f.t.Caps).Seconds(), "s")
	f.ev.Figure("retried after", retried.Seconds(), "s")
	f.ev.Figure("restart done after", restarted.Seconds(), "s")
	return func(r *spec.R) {
		if retried > W-tol {
			f.unknown(r, "the retry came %.2fs after the first publish; it must come by %.2fs (the window %s, %s, minus the tolerance %s); the restart took %.2fs: set a longer Windows.RestartWindow (tck run --restart-window)",
				retried.Seconds(), (W - tol).Seconds(), W, why, tol, took.Seconds())
		}
		for _, rw := range rows {
			f.must(r, rw.err, "%s retention: retrying after the restart (the topic must survive a graceful restart)", rw.r)
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
	f.notTimed() // what survived does not hang on when the kit looked
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
		how     kithooks.Restart
		acked   []string
		missing []string
		err     error
		readErr error
		skipped string
		pubErr  error // the publish that ended the batch early
	}
	var rounds []*round
	for _, how := range []kithooks.Restart{kithooks.Graceful, kithooks.Abrupt} {
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
				rd.pubErr = err
				break
			}
			h.OK("")
			rd.acked = append(rd.acked, id)
		}
		f.rec.Note("producer", "publish", fmt.Sprintf("%d messages", durableBatch), fmt.Sprintf("%d acked", len(rd.acked)))
		if _, err := f.restart(srv, how); err != nil {
			if errors.Is(err, mq.ErrUnsupported) {
				rd.skipped = err.Error()
				continue
			}
			rd.err = err
			continue
		}
		h := f.rec.Invoke("checker", "read-all", topic)
		all, err := b.ReadAll(f.ctx, topic)
		if errors.Is(err, mq.ErrNotFound) {
			// The broker says the topic is gone: none of what was
			// acknowledged on it survived.
			h.OK("topic not found")
			rd.missing = rd.acked
			for _, id := range rd.acked {
				pubs.Invoke("checker", "missing", id).Fail("acknowledged before the restart; the topic is gone after it")
			}
			continue
		}
		if err != nil {
			// A read-back that did not answer says nothing of what the
			// topic holds: indeterminate, not missing.
			h.Info(err.Error())
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
				// The server is the rule's own, started by the kit: its
				// setting is the kit's set-up, not the target's finding.
				r.Ev.SetupHazard("the kit's own server for this rule runs %s, which lets the OS hold acknowledged writes unsynced: a power loss (not a process crash) could lose acknowledged publishes there; on your own server have the broker sync every acknowledged write where that matters (NATS: sync_interval: always; Redis: appendfsync always; Kafka: flush.messages=1, or replicas with acks=all)", setting)
			}
		}
		measured := 0
		var restartErr error
		for _, rd := range rounds {
			if rd.skipped != "" {
				r.Ev.Notef("%s restart not measured: %s", rd.how, rd.skipped)
				continue
			}
			if rd.err != nil {
				// The kit could not restart its own server: that round
				// says nothing about the target (judged after the others).
				r.Ev.Notef("%s restart not measured: %s", rd.how, oneLine(rd.err.Error()))
				restartErr = rd.err
				continue
			}
			measured++
			r.Ev.Figure(fmt.Sprintf("%s restart: acked", rd.how), len(rd.acked), "")
			r.Ev.Figure(fmt.Sprintf("%s restart: missing", rd.how), len(rd.missing), "")
			r.Ev.Notef("%s restart: %d acknowledged publishes, %d missing afterwards", rd.how, len(rd.acked), len(rd.missing))
			if len(rd.missing) > 0 {
				r.Ev.Smallest(smallest(ops, rd.missing, 10))
			}
			if len(rd.acked) == 0 && rd.pubErr != nil {
				f.unknown(r, "%s restart: no publish was acknowledged before it, the first failed: %s", rd.how, oneLine(rd.pubErr.Error()))
			}
			r.Expect(rd.acked).NotTo(gomega.BeEmpty(), "%s restart: no publish was acknowledged before it", rd.how)
			r.Expect(len(rd.missing)).To(gomega.BeZero(), "acknowledged publishes must survive a %s restart: %d of %d missing",
				rd.how, len(rd.missing), len(rd.acked))
		}
		for _, rd := range rounds {
			if rd.readErr != nil {
				f.unknown(r, "reading the topic back after the %s restart failed, so whether its %d acknowledged publishes survived is unknown, not a loss: %s", rd.how, len(rd.acked), oneLine(rd.readErr.Error()))
			}
		}
		if restartErr != nil {
			f.unknown(r, "the kit's own set-up failed, so the rule was not fully checked: %s", oneLine(restartErr.Error()))
		}
		if measured == 0 {
			f.unknown(r, "no restart could be measured")
		}
	}
}
