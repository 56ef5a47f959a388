package api

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/apidesc"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/stall"
)

// API-2.1 is stochastic: trials of N requests with one id released together
// at a barrier, until a violation shows or the rule has the contended
// trials its power target needs (a trial counts only when at least two of
// its requests overlapped in time). At its cap short of the target the rule
// is unknown, never pass. The arithmetic is the event-store race rules'
// (suites/eventstore/power.go): n contended trials without a violation rule
// out, with 99% probability, a defect that shows in a fraction
// 1 - 0.01^(1/n) of contended trials.

const confidence = 0.99

func contendedFor(p float64) int {
	return int(math.Ceil(math.Log(1-confidence) / math.Log(1-p)))
}

func powerOf(n int) float64 {
	if n <= 0 {
		return 1
	}
	return 1 - math.Pow(1-confidence, 1/float64(n))
}

func percent(p float64) string { return fmt.Sprintf("%.3g%%", 100*p) }

// overlapped: at least two answered requests overlapped in time.
func overlapped(as []answer) bool {
	var ss []answer
	for _, a := range as {
		if a.Err == nil {
			ss = append(ss, a)
		}
	}
	sort.Slice(ss, func(i, j int) bool { return ss[i].start < ss[j].start })
	var reach time.Duration
	for i, s := range ss {
		if i > 0 && s.start < reach {
			return true
		}
		reach = max(reach, s.end)
	}
	return false
}

// burst sends n creates of in at once and returns their answers with their
// spans, recorded on rec.
func burst(ctx context.Context, c *client, rec *history.Recorder, in intent, n int) []answer {
	out := make([]answer, n)
	gate := make(chan struct{})
	var ready, done sync.WaitGroup
	t0 := time.Now()
	for i := range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			cc := *c
			cc.rec = rec
			ready.Done()
			<-gate
			start := time.Since(t0)
			a := cc.create(ctx, fmt.Sprintf("client-%d", i+1), in.id, in.scope, in.body)
			a.start, a.end = start, time.Since(t0)
			out[i] = a
		}()
	}
	ready.Wait()
	close(gate)
	done.Wait()
	return out
}

// judge returns the violation of one trial ("" for none) and whether the
// trial is indeterminate (a request got no answer).
func judge(d *apidesc.Description, as []answer) (violation string, indeterminate bool) {
	var created []answer
	for i, a := range as {
		switch {
		case a.Err != nil:
			indeterminate = true
		case a.Status >= 500:
			return fmt.Sprintf("request %d of %d got a server error: %s", i+1, len(as), a), false
		case d.IsCreated(a.Status):
			created = append(created, a)
		case d.Contract == apidesc.Reject409 && contains(d.Answers.Repeat, a.Status):
		case d.Contract == apidesc.Replay && contains(d.Answers.InFlight, a.Status):
		default:
			return fmt.Sprintf("request %d of %d got an answer the description does not declare: %s", i+1, len(as), a), false
		}
	}
	if indeterminate {
		return "", true
	}
	switch {
	case len(created) == 0:
		return fmt.Sprintf("none of the %d requests was answered as the creation", len(as)), false
	case d.Contract == apidesc.Reject409 && len(created) > 1:
		return fmt.Sprintf("%d of %d requests with one id were answered as creations (%s), want exactly one", len(created), len(as), statusList(statuses(created))), false
	case d.Contract == apidesc.Replay:
		for _, a := range created[1:] {
			if a.Status != created[0].Status || !bytes.Equal(a.Body, created[0].Body) || replayedHeaders(a, created[0]) != "" {
				return fmt.Sprintf("%d successes with one id differ: %q and %q; a replay is the first response byte for byte, so there were two creations", len(created), clip(string(created[0].Body), 120), clip(string(a.Body), 120)), false
			}
		}
	}
	return "", false
}

func statuses(as []answer) []int {
	out := make([]int, len(as))
	for i, a := range as {
		out[i] = a.Status
	}
	return out
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func registerRace(s *spec.Set, t Target) {
	cfg := t.Race
	// A race: N requests at a barrier need the processors.
	s.ItRace("API-2.1", func(r *spec.R) {
		d := t.Desc
		target := contendedFor(cfg.Power)
		c := newClient(d, t.URL, 2*cfg.Requests, true, t.TLS)
		defer c.close()
		r.Ev.Figure("contract", string(d.Contract), "")
		r.Ev.Figure("requests per trial", cfg.Requests, "")
		r.Ev.Figure("power target", target, "contended trials")
		var trials, contended, undecided int
		start := time.Now()
		seed := runSeed(t)
		vals := newValues(d, seed, r.ID)
		vals.small = true
		r.Ev.Figure("seed", seed, "tck run --seed replays the rule's values")
		defer func() { r.Ev.Figure("value classes", vals.classes(), "") }()
		var shown []history.Op
		for {
			if r.Context().Err() != nil || stall.Scheduled(start, time.Now()) > cfg.Cap || trials >= cfg.MaxTrials {
				break
			}
			trials++
			rec := history.New()
			in := vals.newIntent(r.ID)
			as := burst(r.Context(), c, rec, in, cfg.Requests)
			violation, indeterminate := judge(d, as)
			if indeterminate {
				undecided++
				continue
			}
			if violation == "" {
				// One resource in the read-back.
				rc := *c
				rc.rec = rec
				n, _, a, err := rc.count(r.Context(), in.id, in.scope)
				switch {
				case a.Err != nil:
					undecided++
					continue
				case err != nil:
					violation = err.Error()
				case n != 1:
					violation = fmt.Sprintf("%d resources carry the id %s after %d requests released together, want 1", n, in.id, cfg.Requests)
				}
			}
			if violation == "" {
				rb := *c
				rb.rec = rec
				a := rb.read(r.Context(), in.id, in.scope)
				switch {
				case a.Err != nil:
					undecided++
					continue
				case !contains(d.Read.Found, a.Status):
					violation = fmt.Sprintf("after the burst the read of id %s answers %s", in.id, a)
				case shows(a.Body, in.body) != "":
					violation = fmt.Sprintf("after the burst the read of id %s does not show the payload: %s", in.id, shows(a.Body, in.body))
				}
			}
			ov := overlapped(as)
			if ov {
				contended++
			}
			shown = rec.Ops()
			if violation != "" {
				figures(r, trials, contended, undecided, target, start)
				r.Ev.Smallest(shown)
				r.Ev.Record(shown)
				r.Expect(violation).To(gomega.BeEmpty(), "trial %d (%s): %s", trials, map[bool]string{true: "contended", false: "not contended"}[ov], violation)
			}
			if contended >= target {
				break
			}
		}
		figures(r, trials, contended, undecided, target, start)
		r.Ev.Record(shown)
		if undecided > 0 {
			r.Ev.Notef("%d of %d trials had a request without an answer and were not judged", undecided, trials)
		}
		if contended < target {
			r.Unknown("reached the race cap (RaceConfig.Cap %s, RaceConfig.MaxTrials %d) with %d of the %d contended trials its power target needs (%d trials in all); "+
				"raise the cap, e.g. api.Target{Race: api.RaceConfig{Cap: 2 * time.Minute}} (a pass short of them would be a guess)",
				cfg.Cap, cfg.MaxTrials, contended, target, trials)
		}
		r.Ev.Notef("no violation in %d contended trials of %d requests with one id: a violation seen in %s of contended trials would have been caught with 99%% probability",
			contended, cfg.Requests, percent(powerOf(contended)))
	})
}

func figures(r *spec.R, trials, contended, undecided, target int, start time.Time) {
	r.Ev.Figure("trials", trials, "")
	r.Ev.Figure("contended trials", contended, "")
	r.Ev.Figure("undecided trials", undecided, "")
	r.Ev.Figure("power", percent(powerOf(contended)), "smallest violation rate caught with 99% probability")
	r.Ev.Figure("rule wall time", time.Since(start).Seconds(), "s")
}
