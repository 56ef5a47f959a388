package eventstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/eskit"
	"github.com/onceproof/tck/internal/gen"
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
	store es.EventStore   // the first handle
	more  []es.EventStore // the other handles on the same data (none: one handle)
	calls int             // calls made through via
	rec   *history.Recorder
	ev    *verdict.Evidence
	rule  string
	seed  int64 // the run's seed (Target.Seed, tck run --seed) or the rule's own

	ids    *identity         // the rule's adversarial identity parts, drawn once
	reqs   map[string]string // request ids by label, drawn once per label
	reqSrc *gen.Source
}

// open opens the rule's handle; it is closed, and the timeline attached,
// when the rule ends however it ends.
func open(r *spec.R, t target) *fixture {
	store, err := t.Open(r.Context())
	r.Expect(err).NotTo(gomega.HaveOccurred(), "opening the store")
	f := &fixture{r: r, ctx: r.Context(), store: store, rec: history.New(), ev: r.Ev, rule: r.ID, seed: gen.Seed(t.Seed)}
	r.Ev.Figure("seed", f.seed, "")
	r.DeferCleanup(func() {
		f.done()
		_ = f.store.Close()
		for _, h := range f.more {
			_ = h.Close()
		}
	})
	if t.OneHandle == "" {
		// A second handle on the same data, as a second service instance
		// over one database: the rule's calls alternate between them, so
		// a check or a tail cached per handle shows.
		h, err := t.Open(r.Context())
		r.Expect(err).NotTo(gomega.HaveOccurred(), "opening a second handle on the store")
		f.more = append(f.more, h)
	}
	return f
}

// handles are all the rule's handles, the first first.
func (f *fixture) handles() []es.EventStore {
	return append([]es.EventStore{f.store}, f.more...)
}

// via is the handle for the rule's next call: the handles in turn.
func (f *fixture) via() (es.EventStore, string) {
	f.calls++
	if i := f.calls % (1 + len(f.more)); i > 0 {
		return f.more[i-1], fmt.Sprintf("@h%d", i+1)
	}
	return f.store, "@h1"
}

// bodiesOfEveryClass draws one body of each class gen.Body has.
func (f *fixture) bodiesOfEveryClass() []gen.Bytes {
	src, seen := f.source(), map[string]bool{}
	var out []gen.Bytes
	for range 500 {
		if len(seen) == 5 {
			break
		}
		b := gen.Draw(src, gen.Body(true))
		if !seen[b.Class] {
			seen[b.Class] = true
			out = append(out, b)
		}
	}
	return out
}

// identity is a rule's adversarial identity parts (docs/eventstore.md,
// "Identity"): drawn from the rule's seed, one class each, so that every
// rule writes long, mixed-case, Unicode, space-padded and separator-laden
// ids rather than short lower-case ones.
type identity struct {
	context, name, id, tenant gen.Text
}

// source is the rule's draws: the seed mixed with the rule id, so that rules
// draw different values and one seed repeats them all.
func (f *fixture) source() *gen.Source {
	h := fnv.New64a()
	h.Write([]byte(f.rule))
	return gen.NewSource(f.seed ^ int64(h.Sum64()>>1))
}

func (f *fixture) identity() *identity {
	if f.ids == nil {
		src, g := f.source(), gen.ID(gen.IDOptions{})
		// The races, ES-1.17 and ES-4.3 draw no long parts: their power comes from
		// appends per second, and keys of a kilobyte slow a database's
		// every call (ES-1, ES-4.1 and ES-4.2 cover long ids).
		bulk := strings.HasPrefix(f.rule, "ES-2.") || f.rule == "ES-4.3" || f.rule == "ES-1.17"
		if bulk {
			g = g.Filter(func(t gen.Text) bool { return t.Class != gen.ClassLong })
		}
		f.ids = &identity{gen.Draw(src, g), gen.Draw(src, g), gen.Draw(src, g), gen.Draw(src, g)}
		// The id is the long one when none is: a store cutting ids to a
		// column width shows in every other rule.
		if f.ids.id.Class != gen.ClassLong && !bulk {
			f.ids.id.S += strings.Repeat("-", 256)
		}
	}
	return f.ids
}

// aggregate returns an aggregate id unique to this rule and call: the
// rule's adversarial parts, with the label and a nonce inside the id (after
// its first character, so that leading and trailing spaces stay where they
// are).
func (f *fixture) aggregate(label string) es.AggregateID {
	p := f.identity()
	_, n := utf8.DecodeRuneInString(p.id.S)
	id := p.id.S[:n] + strings.ToLower(f.rule) + "-" + label + "-" + nonce() + "-" + p.id.S[n:]
	return es.AggregateID{Context: p.context.S, Name: p.name.S, ID: id, Tenant: p.tenant.S}
}

// req is the rule's request id for label: drawn once from the rule's seed
// (every class but NUL), the label kept inside so the timeline stays
// readable.
func (f *fixture) req(label string) string {
	if v, ok := f.reqs[label]; ok {
		return v
	}
	if f.reqs == nil {
		f.reqs, f.reqSrc = map[string]string{}, f.source()
	}
	t := gen.Draw(f.reqSrc, gen.ID(gen.IDOptions{}))
	_, n := utf8.DecodeRuneInString(t.S)
	v := t.S[:n] + "req-" + label + "-" + t.S[n:]
	f.reqs[label] = v
	return v
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
	return fmt.Sprintf("%s v%d req=%s events=%d", short(s.Aggregate.ID), s.Version, short(s.RequestID), len(s.Events))
}

// short quotes an id for a timeline or a reason (Go syntax: spaces, NUL and
// combining marks visible), a long one abbreviated with a hash of the whole
// (abbrev); the rule's drawn values are whole in its notes (done).
func short(id string) string {
	return strconv.Quote(abbrev(id))
}

// append appends through the rule's handle; an append that got no answer
// ends the rule unknown (noAnswer), whatever the rule expected of it.
func (f *fixture) append(actor string, s es.Stream) error {
	h, at := f.via()
	err := f.appendWith(f.ctx, h, actor+at, s)
	f.noAnswer(err, "Append(%s)", describe(s))
	return err
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

// mustAppend appends and requires success. A conflict or a refused
// argument for a valid append is the store's answer, and wrong: fail. Any
// other error (a connection that timed out on a loaded host) is no
// evidence either way: the rule cannot go on and is unknown.
func (f *fixture) mustAppend(s es.Stream) {
	err := f.append("setup", s)
	if err != nil && !errors.Is(err, es.ErrConflict) && !errors.Is(err, es.ErrInvalidArgument) {
		f.r.Unknown("setup append %s failed: %v (an error is no evidence of a violation; the rule could not go on)", describe(s), err)
	}
	f.r.Expect(err).NotTo(gomega.HaveOccurred(), "setup append %s", describe(s))
}

func (f *fixture) load(agg es.AggregateID, from, to int) ([]es.Stream, error) {
	store, at := f.via()
	h := f.rec.Invoke("checker"+at, "load", fmt.Sprintf("%s [%d,%d]", short(agg.ID), from, to))
	got, err := store.Load(f.ctx, agg, from, to)
	if err != nil {
		h.Info(err.Error())
	} else {
		h.OK(fmt.Sprintf("%d streams", len(got)))
	}
	return got, err
}

// history loads everything and requires no error.
func (f *fixture) history(agg es.AggregateID) []es.Stream {
	got, err := f.load(agg, es.InitialVersion, eskit.MaxVersion)
	f.noAnswer(err, "loading %s", short(agg.ID))
	f.r.Expect(err).NotTo(gomega.HaveOccurred(), "loading %s", agg.ID)
	return got
}

func (f *fixture) exists(agg es.AggregateID, requestID string) bool {
	store, at := f.via()
	ok, err := f.existsWith(store, "checker"+at, agg, requestID)
	f.noAnswer(err, "RequestIDExists(%s, %s)", short(agg.ID), short(requestID))
	f.r.Expect(err).NotTo(gomega.HaveOccurred(), "RequestIDExists(%s, %s)", agg, requestID)
	return ok
}

// noAnswer ends the rule unknown when err is no answer from the store (its
// deadline passed, a network timeout): a call that got none is no
// evidence either way, and the rule cannot go on. A check that failed
// before it stands. Any other error is the store's answer.
func (f *fixture) noAnswer(err error, format string, args ...any) {
	var ne net.Error
	if err == nil || !(errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()) {
		return
	}
	f.r.Unknown("%s got no answer: %s (a deadline missed is no evidence of a violation; the rule could not go on)", fmt.Sprintf(format, args...), said(err, 80))
}

// existsWith asks store (another handle, perhaps) on the timeline.
func (f *fixture) existsWith(store es.EventStore, actor string, agg es.AggregateID, requestID string) (bool, error) {
	h := f.rec.Invoke(actor, "exists?", short(agg.ID)+" req="+short(requestID))
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
	h := f.rec.Invoke(actor, "load", short(agg.ID))
	got, err := store.Load(f.ctx, agg, es.InitialVersion, eskit.MaxVersion)
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
	// The timeline and the reason abbreviate long ids; a failure keeps them
	// whole (as figures: the last note is a pass's reason). A pass has no
	// use for them, and they would double a report's size.
	if !f.r.Failed() {
		return
	}
	if f.ids != nil {
		f.ev.Figure("drawn identity, whole (each aggregate id has the rule, a label and a nonce after its first character)",
			fmt.Sprintf("context %q, name %q, id %q, tenant %q", f.ids.context.S, f.ids.name.S, f.ids.id.S, f.ids.tenant.S), "")
	}
	if len(f.reqs) > 0 {
		var parts []string
		for label, v := range f.reqs {
			parts = append(parts, fmt.Sprintf("%s=%q", label, v))
		}
		sort.Strings(parts)
		f.ev.Figure("request ids, whole, by label", strings.Join(parts, ", "), "")
	}
}

// expectHistory requires the stored history to equal want exactly.
func (f *fixture) expectHistory(agg es.AggregateID, want []es.Stream, why string) {
	f.expectStreams(f.history(agg), want, why+": the stored history of "+short(agg.ID))
}

// expectStreams requires got to equal want, stream by stream and byte for
// byte; the reason names the first difference (the timeline has the whole
// answer).
func (f *fixture) expectStreams(got, want []es.Stream, what string) {
	if len(got) != len(want) {
		f.r.Expect(len(got) == len(want)).To(gomega.BeTrue(), "%s must hold %d streams, got %d", what, len(want), len(got))
	}
	if i, diff := diffStreams(got, want); diff != "" {
		f.r.Expect(diff == "").To(gomega.BeTrue(), "%s: stream %d: %s", what, i+1, diff)
	}
}

// diffStreams compares two histories in full (identity, version, ids, event
// names, body bytes: an empty body and a nil one are the same body) and says
// where they first differ ("" when equal).
func diffStreams(got, want []es.Stream) (int, string) {
	if len(got) != len(want) {
		return 0, fmt.Sprintf("%d streams, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		switch {
		case g.Aggregate != w.Aggregate:
			return i, fmt.Sprintf("aggregate %s, want %s", aggLabel(g.Aggregate), aggLabel(w.Aggregate))
		case g.Version != w.Version || g.RequestID != w.RequestID || g.CommandID != w.CommandID:
			return i, fmt.Sprintf("version %d request %s command %q, want %d %s %q", g.Version, short(g.RequestID), g.CommandID, w.Version, short(w.RequestID), w.CommandID)
		case len(g.Events) != len(w.Events):
			return i, fmt.Sprintf("%d events, want %d", len(g.Events), len(w.Events))
		}
		for j := range g.Events {
			ge, we := g.Events[j], w.Events[j]
			if ge.Name != we.Name {
				return i, fmt.Sprintf("event %d named %s, want %s", j+1, short(ge.Name), short(we.Name))
			}
			if !bytes.Equal(ge.Body, we.Body) {
				return i, fmt.Sprintf("event %d body of %d bytes differs from the %d bytes appended (first difference at byte %d)", j+1, len(ge.Body), len(we.Body), firstDiff(ge.Body, we.Body))
			}
		}
	}
	return 0, ""
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func summaries(ss []es.Stream) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = describe(s) + " cmd=" + s.CommandID
	}
	return out
}
