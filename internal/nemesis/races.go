package nemesis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/verdict"
)

// RaceResult is what a store restart did to the ES-2.5 race: across every
// trial, reported successes must equal the streams stored (no phantom
// success, nothing stored that no writer can account for).
type RaceResult struct {
	Kind          string `json:"fault"`
	Trials        int    `json:"trials"`
	Successes     int    `json:"successes"`     // appends reported ok
	Conflicts     int    `json:"conflicts"`     // typed conflicts
	Indeterminate int    `json:"indeterminate"` // other errors: the store may or may not hold them
	Stored        int    `json:"stored"`        // streams stored after the heal
	// Phantom: trials where a writer was told "stored" and the store does
	// not hold its stream.
	Phantom []string `json:"phantom,omitempty"`
	// Unexplained: trials storing a stream that no successful or
	// indeterminate writer can account for, or more than one stream.
	Unexplained []string `json:"unexplained,omitempty"`
	// Recovered: indeterminate appends that turned out stored.
	Recovered int `json:"recovered"`
}

// Valid is the verdict.
func (r RaceResult) Valid() bool { return len(r.Phantom) == 0 && len(r.Unexplained) == 0 }

// Evidence writes the figures and the timeline into ev.
func (r RaceResult) Evidence(ev *verdict.Evidence, rec *history.Recorder) {
	p := r.Kind + ": "
	ev.Figure(p+"trials", r.Trials, "trials")
	ev.Figure(p+"reported successes", r.Successes, "appends")
	ev.Figure(p+"conflicts", r.Conflicts, "appends")
	ev.Figure(p+"indeterminate", r.Indeterminate, "appends")
	ev.Figure(p+"recovered (indeterminate, then found stored)", r.Recovered, "appends")
	ev.Figure(p+"streams stored", r.Stored, "streams")
	ev.Figure(p+"phantom successes", len(r.Phantom), "trials")
	ev.Figure(p+"unexplained streams", len(r.Unexplained), "trials")
	if rec != nil {
		ev.Record(rec.Ops())
	}
}

// RaceUnderFault runs trials of the ES-2.1 race (writers, released together,
// create one aggregate at the initial version, each with its own request id)
// on store, with fault falling once faultAfter trials are done, and keeps
// racing through the fault and after it. Then it loads every aggregate and
// compares what writers were told with what is stored.
func RaceUnderFault(ctx context.Context, store es.EventStore, kind string, trials, writers, faultAfter int, rec *history.Recorder, fault Broken) (RaceResult, error) {
	res := RaceResult{Kind: kind, Trials: trials}
	run := fmt.Sprintf("%d", time.Now().UnixNano())
	type outcome struct {
		req string
		o   history.Outcome
	}
	outcomes := make([][]outcome, trials)
	faultDone := make(chan error, 1)
	for t := 0; t < trials; t++ {
		if t == faultAfter {
			go func() { faultDone <- fault(ctx) }()
		}
		agg := es.AggregateID{Context: "nemesis", Name: "race", ID: fmt.Sprintf("%s-%d", run, t), Tenant: "t"}
		var wg sync.WaitGroup
		gate := make(chan struct{})
		outcomes[t] = make([]outcome, writers)
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := fmt.Sprintf("r-%d-%d", t, w)
				<-gate
				h := rec.Invoke(fmt.Sprintf("w%d", w), "append", agg.ID+" v1 "+req)
				actx, cancel := context.WithTimeout(ctx, 3*time.Second)
				err := store.Append(actx, es.Stream{Aggregate: agg, Version: 1, RequestID: req, CommandID: req,
					Events: []es.Event{{Name: "created", Body: []byte(req)}}})
				cancel()
				o := history.OK
				switch {
				case err == nil:
					h.OK("")
				case errors.Is(err, es.ErrConflict):
					o = history.Fail
					h.Fail(err.Error())
				default:
					o = history.Info
					h.Info(err.Error())
				}
				outcomes[t][w] = outcome{req, o}
			}()
		}
		close(gate)
		wg.Wait()
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		// While the store is down every append fails at once; pace the
		// trials so the race resumes on the healed store, not only before.
		time.Sleep(20 * time.Millisecond)
	}
	if faultAfter < trials {
		if err := <-faultDone; err != nil {
			return res, fmt.Errorf("fault %s: %w", kind, err)
		}
	}
	for t := 0; t < trials; t++ {
		agg := es.AggregateID{Context: "nemesis", Name: "race", ID: fmt.Sprintf("%s-%d", run, t), Tenant: "t"}
		var streams []es.Stream
		err := retry(ctx, func() error {
			var err error
			streams, err = store.Load(ctx, agg, 1, es.MaxVersion)
			return err
		})
		if err != nil {
			return res, fmt.Errorf("load after heal: %w", err)
		}
		res.Stored += len(streams)
		stored := map[string]bool{}
		for _, s := range streams {
			stored[s.RequestID] = true
		}
		ok, info := map[string]bool{}, map[string]bool{}
		for _, o := range outcomes[t] {
			switch o.o {
			case history.OK:
				res.Successes++
				ok[o.req] = true
				if !stored[o.req] {
					res.Phantom = append(res.Phantom, agg.ID+" "+o.req)
				}
			case history.Fail:
				res.Conflicts++
			case history.Info:
				res.Indeterminate++
				info[o.req] = true
				if stored[o.req] {
					res.Recovered++
				}
			}
		}
		if len(streams) > 1 {
			res.Unexplained = append(res.Unexplained, fmt.Sprintf("%s: %d streams at version 1", agg.ID, len(streams)))
		}
		for req := range stored {
			if !ok[req] && !info[req] {
				res.Unexplained = append(res.Unexplained, agg.ID+" "+req+" stored, but its writer was told it failed")
			}
		}
	}
	return res, nil
}

// retry retries f for up to 30 s: the store may still be coming back.
func retry(ctx context.Context, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		err := f()
		if err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}
