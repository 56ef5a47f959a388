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
	repeats []timedAnswer
	refuted bool // its last repeat got an answer the judge fails: the repeats stopped there
}

type timedAnswer struct {
	a     answer
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
			c := newClient(t.Desc, t.URL, 4, true)
			seed := runSeed(t)
			v := newValues(t.Desc, seed, "API-5.2")
			judged := make(chan spec.Body, 1)
			go func() {
				obs, err := repeatOverHorizon(ctx, t, c, v)
				judged <- func(r *spec.R) { judgeRetention(r, t, c, v, seed, obs, err) }
			}()
			return spec.Job{
				Judged: judged,
				End: func(ev *verdict.Evidence) {
					cancel()
					ev.Record(c.rec.Ops())
					c.close()
				},
				Stop: cancel,
			}
		},
	})
}

// repeatOverHorizon creates the probes, then repeats each at four points
// up to the horizon after its creation.
func repeatOverHorizon(ctx context.Context, t Target, c *client, v *values) ([]*retained, error) {
	horizon, _, _ := horizonFor(t)
	var obs []*retained
	for range retentionProbes {
		// A create that got no answer may or may not be stored: a fresh
		// intent replaces it rather than a retry that might be a repeat.
		var p *retained
		err := untilAnswered(ctx, func() error {
			in := v.newIntent("API-5.2")
			sent := time.Now()
			a := c.create(ctx, "kit", in.id, in.scope, in.body)
			if a.Err == nil {
				p = &retained{in: in, first: a, sent: sent, made: time.Now()}
			}
			return a.Err
		})
		if p == nil {
			return obs, fmt.Errorf("the service did not answer the first request: %w", err)
		}
		obs = append(obs, p)
	}
	for _, f := range []float64{0.1, 0.35, 0.7, 1} {
		for _, p := range obs {
			at := p.made.Add(time.Duration(f * float64(horizon)))
			select {
			case <-ctx.Done():
				return obs, fmt.Errorf("the rule ended before its horizon")
			case <-time.After(time.Until(at)):
			}
			a, after := repeatAnswered(ctx, c, p)
			ta := timedAnswer{a: a, after: after, age: time.Since(p.sent)}
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
		a = c.create(ctx, "kit", p.in.id, p.in.scope, p.in.body)
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
func judgeRetention(r *spec.R, t Target, c *client, v *values, seed int64, obs []*retained, err error) {
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
			u.repeated(a, p.first, p.in, fmt.Sprintf("a repeat %.1f s after its creation", ta.after.Seconds()))
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
	for _, p := range obs {
		u.one(p.in, "at the horizon")
	}
	r.Ev.Notef("repeats checked up to %.1f s after creation while the other rules ran; beyond that not verified (tck run --max-wait checks longer, up to the declared retention)", horizon.Seconds())
}
