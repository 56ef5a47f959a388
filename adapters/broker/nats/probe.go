package nats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/mq"
)

// ProbeWindow is the de-dupe window of the probe's topic: far longer than a
// leader kill (election 4 to 9 s, hold 2 s), so the retry falls inside it.
const ProbeWindow = 2 * time.Minute

// probeAckWait is the ack wait of the probe's consumer: the delivery left
// unacked before the kill is due again long before the fault heals.
const probeAckWait = time.Second

// LeaderProbe is what the probe carried across a stream leader kill saw.
// The probe has a topic of its own (so the workload's total-queue checker
// never sees it), whose stream and consumer are led by the node killed.
type LeaderProbe struct {
	Topic string
	ID    string // the de-dupe probe's message id
	// Retried: the same id was published again after another node led the
	// probe's stream; RetryDuplicate is what the broker answered to it.
	Retried        bool
	RetryDuplicate bool
	// RetryAfter is the time from the first publish to the retry's reply:
	// the retry counts only if it is inside the window.
	RetryAfter time.Duration
	// Copies is how many messages with ID the stream holds afterwards
	// (-1: it could not be read back).
	Copies int
	// FirstAttempt is the attempt of the delivery left unacked before the
	// kill; Redelivered the attempt it came back with after the change
	// (0: it never came back).
	FirstAttempt, Redelivered int
	// LeaderMoved: the probe's stream was led by the killed node and
	// another node led it after the kill.
	LeaderMoved bool
}

// Violations are what the probe saw that breaks the contract: a retry of
// the same id inside the window stored again, or a delivery left unacked
// never coming back (or coming back as if first delivered). A probe that
// could not run as intended (no retry, no leader change) is no violation:
// KillStreamLeader reports it as an error instead.
func (p LeaderProbe) Violations() []string {
	var v []string
	if p.Retried && !p.RetryDuplicate {
		v = append(v, fmt.Sprintf("de-dupe across the leader change: the retry of id %s %s after the first publish (window %s) was stored again, not reported as a duplicate", p.ID, p.RetryAfter.Round(time.Millisecond), ProbeWindow))
	}
	if p.Copies > 1 {
		v = append(v, fmt.Sprintf("de-dupe across the leader change: the stream holds %d copies of id %s, want 1", p.Copies, p.ID))
	}
	if p.Copies == 0 {
		v = append(v, fmt.Sprintf("the acknowledged publish of id %s is gone after the leader change", p.ID))
	}
	if p.FirstAttempt > 0 && p.Redelivered == 0 {
		v = append(v, fmt.Sprintf("redelivery after the leader change: the delivery of %s left unacked before the kill never came back", p.ID))
	}
	if p.FirstAttempt > 0 && p.Redelivered > 0 && p.Redelivered <= p.FirstAttempt {
		v = append(v, fmt.Sprintf("redelivery after the leader change: %s came back as attempt %d, not above the unacked attempt %d", p.ID, p.Redelivered, p.FirstAttempt))
	}
	return v
}

// probeRun is the probe while the fault runs.
type probeRun struct {
	p     LeaderProbe
	b     mq.Broker
	js    jetstream.JetStream
	nc    *natsgo.Conn
	group string
	m     mq.Consumer
	first time.Time
	log   Log
	// finished: finish ran and closed the probe's handles.
	finished bool
}

// startProbe creates the probe's topic (three replicas, a long window),
// publishes its message once, and takes one delivery it leaves unacked.
func startProbe(ctx context.Context, open func(context.Context) (mq.Broker, error), url, topic string, replicas int, log Log) (*probeRun, error) {
	b, err := open(ctx)
	if err != nil {
		return nil, fmt.Errorf("probe: opening: %w", err)
	}
	nc, err := natsgo.Connect(url, natsgo.MaxReconnects(-1), natsgo.ReconnectWait(50*time.Millisecond), natsgo.Timeout(2*time.Second))
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("probe: connecting: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		_ = b.Close()
		nc.Close()
		return nil, fmt.Errorf("probe: jetstream: %w", err)
	}
	pr := &probeRun{b: b, nc: nc, js: js, log: log, group: topic + "-g"}
	pr.p = LeaderProbe{Topic: topic + "-probe", ID: topic + "-probe-x", Copies: -1}
	if err := b.CreateTopic(ctx, pr.p.Topic, mq.TopicConfig{Retention: mq.Limits, DedupeWindow: ProbeWindow, Replicas: replicas}); err != nil {
		pr.close()
		return nil, fmt.Errorf("probe: creating its topic: %w", err)
	}
	log.Note("probe", "create-topic", pr.p.Topic, fmt.Sprintf("%d replicas, window %s", replicas, ProbeWindow))
	key := fmt.Sprintf("%s id=%s (before the kill)", pr.p.Topic, pr.p.ID)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	ack, err := b.Publish(pctx, pr.p.Topic, mq.Message{ID: pr.p.ID, Payload: []byte("first")})
	cancel()
	if err != nil {
		log.Step("probe", "publish", key, err)
		pr.close()
		return nil, fmt.Errorf("probe: the first publish: %w", err)
	}
	pr.first = time.Now()
	log.Note("probe", "publish", key, fmt.Sprintf("pos=%s duplicate=%v", ack.Position, ack.Duplicate))
	m, err := b.Consumer(ctx, pr.p.Topic, mq.ConsumerConfig{Group: pr.group, AckWait: probeAckWait})
	if err != nil {
		pr.close()
		return nil, fmt.Errorf("probe: opening its consumer: %w", err)
	}
	pr.m = m
	// A replicated consumer just created may have no leader yet (a loaded
	// host elects slowly): "no responders" is retried, not a failed probe.
	var ds []mq.Delivery
	fctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	for {
		ds, err = m.Fetch(fctx, 1, 3*time.Second)
		if (err == nil && len(ds) > 0) || fctx.Err() != nil || (err != nil && !errors.Is(err, natsgo.ErrNoResponders)) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	if err != nil || len(ds) != 1 {
		pr.close()
		return nil, fmt.Errorf("probe: no first delivery (%d, %v)", len(ds), err)
	}
	pr.p.FirstAttempt = ds[0].Attempt()
	log.Note("probe", "deliver", pr.p.ID, fmt.Sprintf("attempt %d, left unacked across the kill", pr.p.FirstAttempt))
	return pr, nil
}

// lead moves the leaders of the probe's stream and consumer to node (a
// preferred step-down), so that killing node kills theirs too, and waits
// until every replica of both is current: a delivery not yet replicated
// when its leader dies is a lost write of the fault, not of the broker.
func (pr *probeRun) lead(ctx context.Context, node string) error {
	stream := StreamName(pr.p.Topic)
	consumer := StreamName(pr.group)
	req, _ := json.Marshal(map[string]any{"placement": map[string]string{"preferred": node}})
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	return containers.Retry(ctx, func() error {
		ctx, c2 := context.WithTimeout(ctx, 2*time.Second)
		defer c2()
		s, err := pr.js.Stream(ctx, stream)
		if err != nil {
			return err
		}
		si := s.CachedInfo()
		if si.Cluster == nil {
			return fmt.Errorf("probe stream not clustered")
		}
		if si.Cluster.Leader != node {
			_, _ = pr.nc.RequestWithContext(ctx, "$JS.API.STREAM.LEADER.STEPDOWN."+stream, req)
			return fmt.Errorf("probe stream led by %q, not %s", si.Cluster.Leader, node)
		}
		c, err := pr.js.Consumer(ctx, stream, consumer)
		if err != nil {
			return err
		}
		ci := c.CachedInfo()
		if ci.Cluster == nil {
			return fmt.Errorf("probe consumer not clustered")
		}
		if ci.Cluster.Leader != node {
			_, _ = pr.nc.RequestWithContext(ctx, "$JS.API.CONSUMER.LEADER.STEPDOWN."+stream+"."+consumer, req)
			return fmt.Errorf("probe consumer led by %q, not %s", ci.Cluster.Leader, node)
		}
		for _, r := range append(si.Cluster.Replicas, ci.Cluster.Replicas...) {
			if r.Offline || !r.Current {
				return fmt.Errorf("probe replica %s not current", r.Name)
			}
		}
		if ci.NumAckPending != 1 {
			return fmt.Errorf("probe consumer has %d pending acks, want 1", ci.NumAckPending)
		}
		return nil
	})
}

// afterElection runs once another node leads: the probe's stream must have
// left the killed node, the retry of the same id is answered, and the
// unacked delivery comes back.
func (pr *probeRun) afterElection(ctx context.Context, killed string) {
	stream := StreamName(pr.p.Topic)
	lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	_ = containers.Retry(lctx, func() error {
		// Each question is bounded: a stream without a leader does not
		// answer at all.
		actx, c2 := context.WithTimeout(lctx, 2*time.Second)
		defer c2()
		s, err := pr.js.Stream(actx, stream)
		if err != nil {
			return err
		}
		if si := s.CachedInfo(); si.Cluster != nil && si.Cluster.Leader != "" && si.Cluster.Leader != killed {
			pr.p.LeaderMoved = true
			pr.log.Note("probe", "leader", stream, killed+" -> "+si.Cluster.Leader)
			return nil
		}
		return fmt.Errorf("probe stream not led yet")
	})
	cancel()
	// The producer retries with the same id until the stream answers, as a
	// producer whose first reply it never saw would.
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	for rctx.Err() == nil {
		key := fmt.Sprintf("%s id=%s (retry, after the leader change)", pr.p.Topic, pr.p.ID)
		pctx, c2 := context.WithTimeout(rctx, 2*time.Second)
		ack, err := pr.b.Publish(pctx, pr.p.Topic, mq.Message{ID: pr.p.ID, Payload: []byte("retry")})
		c2()
		if err != nil {
			pr.log.Step("probe", "publish", key, err)
			time.Sleep(200 * time.Millisecond)
			continue
		}
		pr.p.Retried, pr.p.RetryDuplicate, pr.p.RetryAfter = true, ack.Duplicate, time.Since(pr.first)
		if ack.Duplicate {
			pr.log.Note("probe", "publish", key, "pos="+ack.Position+" duplicate")
		} else {
			pr.log.Note("probe", "publish", key, "pos="+ack.Position+" stored")
		}
		break
	}
	cancel()
	// The delivery left unacked before the kill comes back. The member's
	// connection may have been to the killed node: on errors, a new member.
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	errs := 0
	for dctx.Err() == nil && pr.p.Redelivered == 0 {
		fctx, c2 := context.WithTimeout(dctx, 3*time.Second)
		ds, err := pr.m.Fetch(fctx, 10, time.Second)
		c2()
		if err != nil {
			if errs++; errs%3 == 0 {
				_ = pr.m.Close()
				octx, c3 := context.WithTimeout(dctx, 5*time.Second)
				if m, err := pr.b.Consumer(octx, pr.p.Topic, mq.ConsumerConfig{Group: pr.group, AckWait: probeAckWait}); err == nil {
					pr.m = m
				}
				c3()
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for _, d := range ds {
			if d.Message().ID == pr.p.ID {
				pr.p.Redelivered = d.Attempt()
				pr.log.Note("probe", "redeliver", pr.p.ID, fmt.Sprintf("attempt %d, after the leader change", d.Attempt()))
				actx, c3 := context.WithTimeout(dctx, 2*time.Second)
				_ = d.Ack(actx)
				c3()
			}
		}
	}
	cancel()
}

// finish reads the probe's topic back, puts the outcome on log, and removes
// the topic.
func (pr *probeRun) finish(ctx context.Context, log Log) {
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	_ = containers.Retry(rctx, func() error {
		actx, c2 := context.WithTimeout(rctx, 5*time.Second)
		defer c2()
		all, err := pr.b.ReadAll(actx, pr.p.Topic)
		if err != nil {
			return err
		}
		pr.p.Copies = 0
		for _, s := range all {
			if s.Message.ID == pr.p.ID {
				pr.p.Copies++
			}
		}
		return nil
	})
	cancel()
	pr.log.Note("probe", "read-all", pr.p.Topic, fmt.Sprintf("%d copies of %s", pr.p.Copies, pr.p.ID))
	p := pr.p
	log.Figure("probe: retry across the leader change answered duplicate", p.RetryDuplicate, "")
	log.Figure("probe: retry after the first publish", p.RetryAfter.Seconds(), "s")
	log.Figure("probe: copies stored of the retried id", p.Copies, "")
	log.Figure("probe: unacked delivery came back as attempt", p.Redelivered, "")
	log.Notef("leader-change probe on topic %s: id %s published before the kill and retried %.1f s later through the new leader (window %s): duplicate=%v, %d cop(ies) stored; its delivery left unacked (attempt %d) came back as attempt %d after the change",
		p.Topic, p.ID, p.RetryAfter.Seconds(), ProbeWindow, p.RetryDuplicate, p.Copies, p.FirstAttempt, p.Redelivered)
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	_ = pr.b.DeleteTopic(dctx, pr.p.Topic)
	cancel()
	pr.finished = true
	pr.close()
}

// problem says why the probe did not run as intended, or "".
func (p LeaderProbe) problem() string {
	switch {
	case !p.LeaderMoved:
		return "the probe's stream was not led by another node after the kill"
	case !p.Retried:
		return "the retry of the probe's id was never answered"
	case p.RetryAfter >= ProbeWindow:
		return fmt.Sprintf("the retry came %s after the first publish, outside the window %s", p.RetryAfter, ProbeWindow)
	case p.Copies < 0:
		return "the probe's topic could not be read back"
	}
	return ""
}

func (pr *probeRun) close() {
	if pr.m != nil {
		_ = pr.m.Close()
	}
	_ = pr.b.Close()
	pr.nc.Close()
}
