package eventstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
)

// fixture is one rule's view of the store: every call goes through it so the
// timeline in the evidence is complete.
//
// Its assertions go through r and so must run on the rule's own goroutine;
// a fixture built without r (the detection-rate test) only runs trials.
type fixture struct {
	r     *spec.R
	ctx   context.Context
	store es.EventStore
	rec   *history.Recorder
	ev    *verdict.Evidence
	rule  string
}

// open opens the rule's handle; it is closed, and the timeline attached,
// when the rule ends however it ends.
func open(r *spec.R, t Target) *fixture {
	store, err := t.Open(r.Context())
	r.Expect(err).NotTo(gomega.HaveOccurred(), "opening the store")
	f := &fixture{r: r, ctx: r.Context(), store: store, rec: history.New(), ev: r.Ev, rule: r.ID}
	r.DeferCleanup(func() {
		f.done()
		_ = f.store.Close()
	})
	return f
}

// aggregate returns an aggregate id unique to this rule and call.
func (f *fixture) aggregate(label string) es.AggregateID {
	return es.AggregateID{Context: "tck", Name: "order", ID: strings.ToLower(f.rule) + "-" + label + "-" + nonce(), Tenant: "t1"}
}

// nonce is unique within the process and, through the random run prefix,
// across runs against one shared database. A counter, not a random read per
// call: race trials call it thousands of times a second.
func nonce() string {
	return runPrefix + strconv.FormatUint(counter.Add(1), 36)
}

var (
	counter   atomic.Uint64
	runPrefix = func() string {
		var b [4]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:]) + "-"
	}()
)

func stream(agg es.AggregateID, version int, requestID string, events ...string) es.Stream {
	if len(events) == 0 {
		events = []string{"Happened"}
	}
	s := es.Stream{Aggregate: agg, Version: version, RequestID: requestID, CommandID: "cmd-" + nonce()}
	for i, name := range events {
		s.Events = append(s.Events, es.Event{Name: name, Body: []byte(fmt.Sprintf(`{"n":%d,"v":%d}`, i, version))})
	}
	return s
}

// classify maps an Append error to a history outcome: a typed conflict
// certainly did not take effect (fail); any other error is indeterminate (info).
func classify(err error) (history.Outcome, string) {
	if err == nil {
		return history.OK, "stored"
	}
	return outcomeOf(err), conflictName(err) + ": " + err.Error()
}

func outcomeOf(err error) history.Outcome {
	if conflictName(err) != "error" {
		return history.Fail
	}
	return history.Info
}

// conflictName names the typed conflict err carries, or "error".
func conflictName(err error) string {
	var dr *es.DuplicateRequestIDError
	var vc *es.VersionConflictError
	var da *es.DuplicateAggregateIDError
	switch {
	case errors.As(err, &dr):
		return "DuplicateRequestID"
	case errors.As(err, &vc):
		return "VersionConflict"
	case errors.As(err, &da):
		return "DuplicateAggregateID"
	}
	return "error"
}

func isConflict(err error) bool {
	return conflictName(err) != "error" || errors.Is(err, es.ErrConflict)
}

func describe(s es.Stream) string {
	return fmt.Sprintf("%s v%d req=%s events=%d", s.Aggregate.ID, s.Version, s.RequestID, len(s.Events))
}

func (f *fixture) append(actor string, s es.Stream) error {
	return f.appendWith(f.ctx, f.store, actor, s)
}

func (f *fixture) appendWith(ctx context.Context, store es.EventStore, actor string, s es.Stream) (err error) {
	h := f.rec.Invoke(actor, "append", describe(s))
	defer func() {
		if p := recover(); p != nil {
			h.Info(fmt.Sprintf("panic: %v", p))
			panic(p)
		}
		h.Complete(classify(err))
	}()
	return store.Append(ctx, s)
}

// mustAppend appends and requires success.
func (f *fixture) mustAppend(s es.Stream) {
	err := f.append("setup", s)
	f.r.Expect(err).NotTo(gomega.HaveOccurred(), "setup append %s", describe(s))
}

func (f *fixture) load(agg es.AggregateID, from, to int) ([]es.Stream, error) {
	h := f.rec.Invoke("checker", "load", fmt.Sprintf("%s [%d,%d]", agg.ID, from, to))
	got, err := f.store.Load(f.ctx, agg, from, to)
	if err != nil {
		h.Info(err.Error())
	} else {
		h.OK(fmt.Sprintf("%d streams", len(got)))
	}
	return got, err
}

// history loads everything and requires no error.
func (f *fixture) history(agg es.AggregateID) []es.Stream {
	got, err := f.load(agg, es.InitialVersion, es.MaxVersion)
	f.r.Expect(err).NotTo(gomega.HaveOccurred(), "loading %s", agg.ID)
	return got
}

func (f *fixture) exists(agg es.AggregateID, requestID string) bool {
	ok, err := f.existsWith(f.store, "checker", agg, requestID)
	f.r.Expect(err).NotTo(gomega.HaveOccurred(), "RequestIDExists(%s, %s)", agg, requestID)
	return ok
}

// existsWith asks store (another handle, perhaps) on the timeline.
func (f *fixture) existsWith(store es.EventStore, actor string, agg es.AggregateID, requestID string) (bool, error) {
	h := f.rec.Invoke(actor, "exists?", agg.String()+" req="+requestID)
	ok, err := store.RequestIDExists(f.ctx, agg, requestID)
	if err != nil {
		h.Info(err.Error())
	} else {
		h.OK(fmt.Sprint(ok))
	}
	return ok, err
}

// loadWith loads agg's whole history through store on the timeline.
func (f *fixture) loadWith(store es.EventStore, actor string, agg es.AggregateID) ([]es.Stream, error) {
	h := f.rec.Invoke(actor, "load", agg.ID)
	got, err := store.Load(f.ctx, agg, es.InitialVersion, es.MaxVersion)
	if err != nil {
		h.Info(err.Error())
	} else {
		h.OK(fmt.Sprintf("%d streams", len(got)))
	}
	return got, err
}

// done attaches the timeline to the evidence.
// (Race rules record their own trial history and leave this one empty.)
func (f *fixture) done() {
	if ops := f.rec.Ops(); len(ops) > 0 {
		f.ev.Record(ops)
	}
}

// expectHistory requires the stored history to equal want exactly.
func (f *fixture) expectHistory(agg es.AggregateID, want []es.Stream, why string) {
	got := f.history(agg)
	f.r.Expect(summaries(got)).To(gomega.Equal(summaries(want)), "%s: stored history of %s", why, agg.ID)
	f.r.Expect(got).To(gomega.Equal(want), "%s: stored streams of %s (bytes)", why, agg.ID)
}

func summaries(ss []es.Stream) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = describe(s) + " cmd=" + s.CommandID
	}
	return out
}
