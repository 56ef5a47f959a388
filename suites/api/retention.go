package api

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/poll"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
)

// defaultHorizon is how long after a creation API-5.2 checks repeats by
// default: past the few seconds a key memory with a short time-to-live
// keeps (a 3 s or a 5 s cache in front of the store is caught by the last
// repeat, at the horizon), short enough for a run: the repeats wait in the
// background while the other rules run.
const defaultHorizon = 6 * time.Second

// retentionProbes is how many intents API-5.2 creates and repeats.
const retentionProbes = 3

// unansweredRetry is how long a repeat that got no answer is sent again:
// the workload runs beside the other rules, and a rule that restarts the
// service (API-1.5, API-5.1, API-5.3) refuses connections for a moment.
const unansweredRetry = 15 * time.Second

// horizonFor is API-5.2's horizon: the kit's default, or the run's
// --max-wait when it sets one (longer or shorter: the longest a rule may
// wait), within the declared retention.
func horizonFor(t Target) (horizon, ret time.Duration, declared bool) {
	horizon = defaultHorizon
	if t.Horizon > 0 {
		horizon = t.Horizon
	}
	ret, declared = t.Desc.RetentionFor()
	if declared {
		horizon = min(horizon, ret*9/10)
	}
	return horizon, ret, declared
}

// retained is what API-5.2's workload saw of one intent.
type retained struct {
	in      intent
	first   answer
	sent    time.Time // before the first request was sent: the key is no older than since then
	made    time.Time // when its answer came back
	on      *client   // the replica that created it
	repeats []timedAnswer
	refuted bool // its last repeat got an answer the judge fails: the repeats stopped there
}

type timedAnswer struct {
	a     answer
	on    *client       // the replica the repeat went to
	after time.Duration // since the creation, when the repeat was sent
	// age bounds the key's age at the service when it answered the
	// repeat: from before the first request to the repeat's answer, so a
	// pause of the kit's own (a late answer read, a late repeat) makes it
	// larger, never smaller.
	age time.Duration
}

// registerRetention registers API-5.2 as a background workload: its
// repeats wait out the horizon while the other rules run, and the judge
// checks what they got.
func registerRetention(s *spec.Set, t Target) {
	s.Background("API-5.2", spec.Workload{
		Wait: func() time.Duration { h, _, _ := horizonFor(t); return h },
		Start: func() spec.Job {
			ctx, cancel := context.WithCancel(context.Background())
			c := newClient(t.Desc, t.URL, 4, true, t.TLS)
			reps := spread(c, t)
			seed := runSeed(t)
			v := newValues(t.Desc, seed, "API-5.2")
			judged := make(chan spec.Body, 1)
			go func() {
				obs, err := repeatOverHorizon(ctx, t, reps, v)
				judged <- func(r *spec.R) { judgeRetention(r, t, c, reps, v, seed, obs, err) }
			}()
			return spec.Job{
				Judged: judged,
				End: func(ev *verdict.Evidence) {
					cancel()
					ev.Record(c.rec.Ops())
					for _, c := range reps {
						c.close()
					}
				},
				Stop: cancel,
			}
		},
	})
}

// repeatOverHorizon creates the probes, then repeats each at four points
// up to the horizon after its creation. Probe i is created on replica i and
// its j-th repeat goes to replica i+1+j: with two replicas a probe's
// repeats alternate, the first on the replica that did not create it, and
// every replica serves every point of the horizon (a replica whose clock
// runs fast, or that keeps keys of its own, is met).
func repeatOverHorizon(ctx context.Context, t Target, reps []*client, v *values) ([]*retained, error) {
	horizon, _, _ := horizonFor(t)
	var obs []*retained
	for i := range retentionProbes {
		c := reps[i%len(reps)]
		// A create that got no answer may or may not be stored: a fresh
		// intent replaces it rather than a retry that might be a repeat.
		var p *retained
		err := untilAnswered(ctx, func() error {
			in := v.newIntent("API-5.2")
			sent := time.Now()
			a := c.create(ctx, c.actor, in.id, in.scope, in.body)
			if a.Err == nil {
				p = &retained{in: in, first: a, sent: sent, made: time.Now(), on: c}
			}
			return a.Err
		})
		if p == nil {
			return obs, fmt.Errorf("the service did not answer the first request: %w", err)
		}
		obs = append(obs, p)
	}
	for j, f := range []float64{0.1, 0.35, 0.7, 1} {
		for i, p := range obs {
			c := reps[(i+1+j)%len(reps)]
			at := p.made.Add(time.Duration(f * float64(horizon)))
			select {
			case <-ctx.Done():
				return obs, fmt.Errorf("the rule ended before its horizon")
			case <-time.After(time.Until(at)):
			}
			a, after := repeatAnswered(ctx, c, p)
			ta := timedAnswer{a: a, on: c, after: after, age: time.Since(p.sent)}
			p.repeats = append(p.repeats, ta)
			if refuted(t, ta, p.first) {
				// The judge fails this repeat whatever the later ones get:
				// waiting out the rest of the horizon adds nothing.
				p.refuted = true
				return obs, nil
			}
		}
	}
	return obs, nil
}

// refuted says whether the judge will fail ta, a repeat of the creation
// first: an answer that is not the declared repeat answer, to a repeat
// that reached the service within the declared retention.
func refuted(t Target, ta timedAnswer, first answer) bool {
	if ret, declared := t.Desc.RetentionFor(); ta.a.Err != nil || (declared && ta.age > ret) {
		return false
	}
	if t.Desc.Contract == Reject409 {
		return !slices.Contains(t.Desc.Answers.Repeat, ta.a.Status)
	}
	return ta.a.Status != first.Status || !bytes.Equal(ta.a.Body, first.Body)
}

// repeatAnswered sends p's repeat until the service answers (a repeat is
// safe to send again) or unansweredRetry passes.
func repeatAnswered(ctx context.Context, c *client, p *retained) (a answer, after time.Duration) {
	_ = untilAnswered(ctx, func() error {
		after = time.Since(p.made)
		a = c.create(ctx, c.actor, p.in.id, p.in.scope, p.in.body)
		return a.Err
	})
	return a, after
}

// untilAnswered calls send every 50 ms until it got an answer (nil) or
// unansweredRetry passed; it returns send's last error.
func untilAnswered(ctx context.Context, send func() error) error {
	ctx, cancel := context.WithTimeout(ctx, unansweredRetry)
	defer cancel()
	return poll.Until(ctx, 50*time.Millisecond, 50*time.Millisecond, send)
}

// judgeRetention turns what the workload saw into API-5.2's verdict.
func judgeRetention(r *spec.R, t Target, c *client, reps []*client, v *values, seed int64, obs []*retained, err error) {
	u := &run{r: r, t: t, d: t.Desc, c: c, v: v, seed: seed}
	r.Ev.Figure("contract", string(t.Desc.Contract), "")
	r.Ev.Figure("seed", seed, "tck run --seed replays the rule's values and schedule")
	horizon, ret, declared := horizonFor(t)
	if declared {
		r.Ev.Figure("declared retention", ret.String(), "")
	} else {
		r.Ev.Notef("the description declares no retention: a key is to be recognised for ever")
	}
	r.Ev.Figure("horizon", horizon.Seconds(), "s")
	r.Ev.Figure("replicas", len(reps), "")
	if len(reps) > 1 {
		r.Ev.Notef("probe i was created on replica-(i+1) and its repeats went to the replicas after it in turn (the history names each replica-N)")
	}
	if err != nil {
		r.Unknown("%v", err)
	}
	judged, late := 0, 0
	for _, p := range obs {
		r.Expect(p.first.Status).To(gomega.BeElementOf(t.Desc.Create.Created),
			"the first request (id %s) must answer a declared creation status %s, got %s", p.in.id, statusList(t.Desc.Create.Created), p.first)
		for _, ta := range p.repeats {
			a := u.answered(ta.a, "the repeat")
			if declared && ta.age > ret {
				// The kit itself was late (paused, starved): past the
				// declared retention the service may forget the key.
				late++
				continue
			}
			judged++
			u.compare(a, p.first)
			wrong := repeatWrong(t.Desc, a, p.first)
			r.Expect(wrong == "").To(gomega.BeTrue(), "id %s created%s, repeated %.1f s later%s: must get %s, got %s%s",
				abbrevID(p.in.id, 24), p.on.where(), ta.after.Seconds(), ta.on.where(), declaredRepeat(t.Desc), wrong, u.seedTag())
		}
	}
	if late > 0 {
		r.Ev.Notef("%d repeats may have reached the service after the declared retention because the kit was late (its host paused or starved it): not judged", late)
		if judged == 0 {
			r.Unknown("every repeat may have reached the service after the declared retention (the kit was late): nothing was judged")
		}
	}
	for _, p := range obs {
		if p.refuted {
			r.Ev.Notef("the repeats stopped at the first wrong answer (id %s, %.1f s after its creation): the rest of the horizon could not change the verdict", p.in.id, p.repeats[len(p.repeats)-1].after.Seconds())
		}
	}
	for i, p := range obs {
		u.c = reps[(i+1)%len(reps)]
		u.one(p.in, "at the horizon"+u.c.where())
	}
	r.Ev.Notef("repeats checked up to %.1f s after creation while the other rules ran; beyond that not verified (tck run --max-wait checks longer, up to the declared retention)", horizon.Seconds())
}
