package api

import (
	"bytes"
	"fmt"
	"maps"
	"mime"
	"slices"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/apidesc"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
)

// run is one rule's run: its client and the checks every rule shares.
type run struct {
	r    *spec.R
	t    Target
	d    *apidesc.Description
	c    *client
	v    *values
	seed int64
}

func begin(r *spec.R, t Target) *run {
	c := newClient(t.Desc, t.URL, 4, true, t.TLS)
	seed := runSeed(t)
	v := newValues(t.Desc, seed, r.ID)
	r.DeferCleanup(func() {
		r.Ev.Record(c.rec.Ops())
		r.Ev.Figure("value classes", v.classes(), "")
		c.close()
	})
	r.Ev.Figure("contract", string(t.Desc.Contract), "")
	r.Ev.Figure("seed", seed, "tck run --seed replays the rule's values and schedule")
	return &run{r: r, t: t, d: t.Desc, c: c, v: v, seed: seed}
}

// runSeed is the target's seed, or a fresh one the rule records.
func runSeed(t Target) int64 {
	if t.Seed != 0 {
		return t.Seed
	}
	return time.Now().UnixNano() & (1<<53 - 1) // exact in a JSON report
}

// answered ends the rule as unknown when the service did not answer: the
// kit cannot tell what happened.
func (u *run) answered(a answer, what string) answer {
	if a.Err != nil {
		u.r.Unknown("the service did not answer %s: %v", what, a.Err)
	}
	return a
}

// create sends in and requires a declared creation.
func (u *run) create(in intent, what string) answer {
	a := u.answered(u.c.create(u.r.Context(), "kit", in.id, in.scope, in.body), what)
	u.r.Expect(a.Status).To(gomega.BeElementOf(u.d.Create.Created),
		"%s (id %s) must answer a declared creation status %s, got %s", what, in.id, statusList(u.d.Create.Created), a)
	return a
}

// readShows reads in.id back and requires it to show in's payload; it
// returns the read body.
func (u *run) readShows(in intent, when string) []byte {
	a := u.answered(u.c.read(u.r.Context(), in.id, in.scope), "the read "+when)
	u.r.Expect(a.Status).To(gomega.BeElementOf(u.d.Read.Found),
		"the authoritative read of id %s %s must find it (%s), got %s", in.id, when, statusList(u.d.Read.Found), a)
	u.r.Expect(shows(a.Body, in.body)).To(gomega.BeEmpty(), "the read of id %s %s must show the payload %s", in.id, when, in.body)
	return a.Body
}

// one requires exactly one resource to carry in.id.
func (u *run) one(in intent, when string) {
	n, listed, a, err := u.c.count(u.r.Context(), in.id, in.scope)
	if a.Err != nil {
		u.r.Unknown("the service did not answer the count %s: %v", when, a.Err)
	}
	u.r.Expect(err).NotTo(gomega.HaveOccurred(), "counting the resources of id %s %s", in.id, when)
	if !listed {
		u.r.Ev.Notef("the description declares no list: one resource is inferred from the read by id, which cannot show a second one")
	}
	u.r.Ev.Figure("resources carrying the id", n, "")
	u.r.Expect(n).To(gomega.Equal(1), "exactly one resource must carry id %s %s (%s)", in.id, when, a)
}

// unchanged requires the read to equal an earlier read.
func (u *run) unchanged(in intent, before []byte, after string) {
	now := u.readShows(in, after)
	u.r.Expect(sameJSON(now, before)).To(gomega.BeTrue(), "the original must be unchanged %s: read %s before, %s after", after, clip(string(before), 200), clip(string(now), 200))
}

// repeated requires the declared answer to a repeat of the first request,
// whose answer was first.
func (u *run) repeated(a, first answer, in intent, what string) {
	u.compare(a, first)
	u.r.Expect(a.Status).To(gomega.BeNumerically("<", 500), "%s must not be a server error, got %s", what, a)
	if u.d.Contract == apidesc.Reject409 {
		u.r.Expect(a.Status).To(gomega.BeElementOf(u.d.Answers.Repeat),
			"reject-409: %s (id %s) must be refused with %s, the original unchanged, got %s", what, in.id, statusList(u.d.Answers.Repeat), a)
		return
	}
	u.r.Expect(a.Status).To(gomega.Equal(first.Status), "replay: %s (id %s) must get the first response's status %d, got %s", what, in.id, first.Status, a)
	u.r.Expect(bytes.Equal(a.Body, first.Body)).To(gomega.BeTrue(),
		"replay: %s (id %s) must get the first response byte for byte: first %q, now %q", what, in.id, clip(string(first.Body), 200), clip(string(a.Body), 200))
	diff := replayedHeaders(a, first)
	u.r.Expect(diff).To(gomega.BeEmpty(), "replay: %s (id %s) must carry the first response's headers: %s", what, in.id, diff)
}

// replayHeaders are the headers of a creation a replay must repeat: where
// the resource is, and how its body is to be read.
var replayHeaders = []string{"Location", "Content-Type"}

// replayedHeaders lists the headers of first that a lacks or changes.
func replayedHeaders(a, first answer) string {
	var diffs []string
	for _, h := range replayHeaders {
		if want := first.Header.Get(h); want != "" && a.Header.Get(h) != want {
			diffs = append(diffs, fmt.Sprintf("%s: first %q, now %q", h, want, a.Header.Get(h)))
		}
	}
	return strings.Join(diffs, "; ")
}

// compare records the declared answer to a repeat against the one seen.
func (u *run) compare(a, first answer) {
	replayed := a.Status == first.Status && bytes.Equal(a.Body, first.Body) && replayedHeaders(a, first) == ""
	var actual string
	switch {
	case replayed:
		actual = "the first response replayed byte for byte"
	case slices.Contains(u.d.Answers.Repeat, a.Status):
		actual = fmt.Sprintf("refused with %d", a.Status)
	case u.d.IsCreated(a.Status):
		actual = fmt.Sprintf("answered %d as a new creation", a.Status)
	default:
		actual = fmt.Sprintf("answered %d", a.Status)
	}
	declared := fmt.Sprintf("reject-409: refused with %s", statusList(u.d.Answers.Repeat))
	match := u.d.Contract == apidesc.Reject409 && slices.Contains(u.d.Answers.Repeat, a.Status)
	if u.d.Contract == apidesc.Replay {
		declared, match = "replay: the first response byte for byte", replayed
	}
	u.r.Ev.Compare(verdict.Comparison{Setting: "answer to a repeated id", Declared: declared, Actual: actual, Source: "measured", Match: match})
}

func registerBasics(s *spec.Set, t Target) {
	s.It("API-1.1", func(r *spec.R) {
		u := begin(r, t)
		in := u.v.newIntent(r.ID)
		a := u.answered(u.c.read(r.Context(), in.id, in.scope), "the read before the create")
		r.Expect(a.Status).To(gomega.BeElementOf(u.d.Read.Missing),
			"before any request, the read of a fresh id %s must answer the declared missing status %s, got %s", in.id, statusList(u.d.Read.Missing), a)
		u.create(in, "the first request")
		u.readShows(in, "right after its creation")
		u.one(in, "after its creation")
	})

	s.It("API-1.2", func(r *spec.R) {
		u := begin(r, t)
		in := u.v.newIntent(r.ID)
		first := u.create(in, "the first request")
		before := u.readShows(in, "after the first request")
		again := u.answered(u.c.create(r.Context(), "kit", in.id, in.scope, in.body), "the repeat")
		u.repeated(again, first, in, "a repeat with the same id and payload")
		u.casedRepeats(in, first)
		u.unchanged(in, before, "after the repeat")
		u.one(in, "after the repeat")
	})

	s.It("API-1.3", func(r *spec.R) {
		u := begin(r, t)
		in := u.v.newIntent(r.ID)
		u.create(in, "the first request")
		before := u.readShows(in, "after the first request")
		// Each field changed in turn: a fingerprint over a subset of the
		// fields lets one of them through.
		for _, o := range in.others(u.d) {
			a := u.answered(u.c.create(r.Context(), "kit", o.id, o.scope, o.body), "the request with another payload")
			r.Expect(a.Status).To(gomega.BeElementOf(u.d.Answers.Mismatch),
				"the same id %s with another payload %s must be refused with %s, got %s", in.id, clip(string(o.body), 160), statusList(u.d.Answers.Mismatch), a)
		}
		u.unchanged(in, before, "after the refused payloads")
		u.one(in, "after the refused payload")
	})

	s.It("API-1.4", func(r *spec.R) {
		u := begin(r, t)
		a := u.v.newIntent(r.ID)
		b := a.other(u.d)
		b.scope = u.v.tenant()
		r.Ev.Notef("one id %s under the scopes %s (%s %s) and %s", a.id, a.scope, u.d.Scope.In, u.d.Scope.Name, b.scope)
		u.create(a, "the request under the first scope")
		before := u.readShows(a, "under the first scope")
		u.create(b, "the same id under another scope")
		u.readShows(b, "under the other scope")
		u.unchanged(a, before, "after the request under the other scope")
		u.one(a, "under the first scope")
		u.one(b, "under the other scope")
		u.decoyScope()
	})

	// Alone: it restarts the service the other rules talk to.
	s.ItAlone("API-1.5", func(r *spec.R) {
		u := begin(r, t)
		in := u.v.newIntent(r.ID)
		first := u.create(in, "the first request")
		before := u.readShows(in, "before the restart")
		h := u.c.rec.Invoke("kit", "restart the service", "")
		if err := t.Restart(r.Context()); err != nil {
			h.Fail(err.Error())
			r.Unknown("the kit could not restart the service: %v", err)
		}
		h.OK("listening again")
		u.unchanged(in, before, "after the restart")
		again := u.answered(u.c.create(r.Context(), "kit", in.id, in.scope, in.body), "the repeat after the restart")
		u.repeated(again, first, in, "a repeat after the restart")
		u.one(in, "after the restart")
	})

}

// casedRepeats repeats in's first request with the id's header name, then
// the scope's, in other casings (values.casings). Field names are
// case-insensitive (RFC 9110 §5.1), so each is the same request: a
// gateway or a hand-written parser that matches the declared name exactly
// sees no key (or no tenant) and answers as to another request.
func (u *run) casedRepeats(in intent, first answer) {
	d, r := u.d, u.r
	var tries []names
	if d.ID().In == apidesc.InHeader {
		for _, n := range u.v.casings(d.ID().Name) {
			tries = append(tries, names{id: n})
		}
	}
	if d.Scope != nil && d.Scope.In == apidesc.InHeader && in.scope != "" {
		for _, n := range u.v.casings(d.Scope.Name) {
			tries = append(tries, names{scope: n})
		}
	}
	if len(tries) == 0 {
		r.Ev.Notef("neither the id nor the scope travels in a header: no repeats with header names in other casings")
		return
	}
	sent := make([]string, len(tries))
	for i, n := range tries {
		what := fmt.Sprintf("header %q", clip(n.id, 40))
		if n.scope != "" {
			what = fmt.Sprintf("header %q (the scope)", clip(n.scope, 40))
		}
		sent[i] = what
		a := u.answered(u.c.createAs(r.Context(), "kit", in.id, in.scope, in.body, n), "the repeat with "+what)
		if wrong := repeatWrong(d, a, first); wrong != "" {
			r.Ev.Compare(verdict.Comparison{Setting: "answer to a repeat, header names in other casings", Declared: declaredRepeat(d), Actual: what + ": " + wrong, Source: "measured"})
			r.Expect(wrong).To(gomega.BeEmpty(), "repeat with %s: must be a repeat (%s), got %s%s", what, declaredRepeat(d), wrong, u.seedTag())
		}
	}
	r.Ev.Figure("header-name casings", strings.Join(sent, ", "), "each a repeat: the declared repeat answer")
	r.Ev.Compare(verdict.Comparison{Setting: "answer to a repeat, header names in other casings", Declared: declaredRepeat(d), Actual: fmt.Sprintf("the declared answer in all %d casings", len(tries)), Source: "measured", Match: true})
}

// decoyScope sends a create whose body holds a member named like the
// scope with another tenant's value: the declared place of the scope
// decides, not the body. A service that refuses a member it does not
// declare is not judged on this part (the evidence says so).
func (u *run) decoyScope() {
	d, r := u.d, u.r
	if d.Scope.In == apidesc.InBody {
		return
	}
	name := d.Errors.ScopeField
	if name == "" {
		name = "tenant"
	}
	if _, taken := d.Create.Body[name]; taken || (d.ID().In == apidesc.InBody && d.ID().Name == name) {
		return
	}
	in := u.v.newIntent(r.ID)
	decoy := u.v.tenant()
	sent := maps.Clone(in.fields)
	sent[name] = decoy
	a := u.answered(u.c.create(r.Context(), "kit", in.id, in.scope, d.Payload(in.id, sent)), "the create with a decoy scope in its body")
	if !d.IsCreated(a.Status) {
		r.Ev.Notef("a create whose body holds the member %q the description does not declare was answered %s: the decoy check is not judged", name, a)
		return
	}
	r.Ev.Notef("a create under the scope %s whose body member %q says %s: the declared %s %s decides", in.scope, name, decoy, d.Scope.In, d.Scope.Name)
	// The read shows the payload the description declares; what it makes
	// of the decoy member is the service's.
	u.readShows(in, "under its declared scope, after a create whose body named another")
	m := in
	m.scope = decoy
	if rd := u.answered(u.c.read(r.Context(), m.id, m.scope), "the read under the body's decoy scope"); !slices.Contains(d.Read.Missing, rd.Status) {
		r.Expect(rd.Status).To(gomega.BeElementOf(d.Read.Missing), "the scope is the declared %s %s, not the body's member %q: id %s must not exist under the decoy scope %s, got %s", d.Scope.In, d.Scope.Name, name, in.id, decoy, rd)
	}
}

// registerIdentity is API-3.2 and API-4.1: identity by id, and refusals
// that carry it.
func registerIdentity(s *spec.Set, t Target) {
	s.It("API-3.2", func(r *spec.R) {
		u := begin(r, t)
		in := u.v.newIntent(r.ID)
		twin := in.withID(u.d, in.id+"-twin")
		u.create(in, "the first intent")
		a := u.answered(u.c.create(r.Context(), "kit", twin.id, twin.scope, twin.body), "a second intent with an identical payload")
		r.Expect(a.Status).To(gomega.BeElementOf(u.d.Create.Created),
			"a fresh id %s with a payload identical to id %s's is a new request and must create (%s), got %s", twin.id, in.id, statusList(u.d.Create.Created), a)
		u.readShows(in, "after the second intent")
		u.readShows(twin, "after its creation")
	})

	s.It("API-4.1", func(r *spec.R) {
		u := begin(r, t)
		in := u.v.newIntent(r.ID)
		u.create(in, "the first request")
		var refusals []answer
		if u.d.Contract == apidesc.Reject409 {
			refusals = append(refusals, u.answered(u.c.create(r.Context(), "kit", in.id, in.scope, in.body), "the repeat"))
		}
		for _, o := range in.others(u.d) {
			refusals = append(refusals, u.answered(u.c.create(r.Context(), "kit", o.id, o.scope, o.body), "the request with another payload"))
		}
		for _, a := range refusals {
			u.carries(a, in)
		}
	})
}

// carries requires a refusal to be a JSON body carrying the identifiers.
func (u *run) carries(a answer, in intent) {
	r, d := u.r, u.d
	r.Expect(a.Status).To(gomega.And(gomega.BeNumerically(">=", 400), gomega.BeNumerically("<", 500)),
		"a repeat of id %s must be refused with a 4xx carrying the ids, got %s", in.id, a)
	ct, _, _ := mime.ParseMediaType(a.Header.Get("Content-Type"))
	r.Expect(ct).To(gomega.BeElementOf("application/problem+json", "application/json"),
		"the refusal of id %s must be JSON (RFC 9457 application/problem+json), got Content-Type %q: %s", in.id, a.Header.Get("Content-Type"), a)
	if ct == "application/json" {
		r.Ev.Notef("the refusal is application/json; RFC 9457 names application/problem+json")
	}
	body := object(a.Body)
	r.Expect(body).NotTo(gomega.BeNil(), "the refusal of id %s must be a JSON object, got %s", in.id, a)
	if st, ok := body["status"]; ok {
		r.Expect(st).To(gomega.BeNumerically("==", a.Status), "the problem's status member must equal the HTTP status %d", a.Status)
	}
	r.Expect(member(body, d.Errors.IDField, in.id)).To(gomega.BeTrue(),
		"the refusal must carry the request id %s as a member%s, not only in text: %s", in.id, named(d.Errors.IDField), a)
	if d.Scope != nil && in.scope != "" {
		r.Expect(member(body, d.Errors.ScopeField, in.scope)).To(gomega.BeTrue(),
			"the refusal must carry the scope %s as a member%s: %s", in.scope, named(d.Errors.ScopeField), a)
	}
	for _, f := range d.Errors.Fields {
		v, ok := body[f]
		r.Expect(ok && v != nil && v != "").To(gomega.BeTrue(), "the refusal must carry the member %q the description declares (errors.fields): %s", f, a)
	}
}

func named(field string) string {
	if field == "" {
		return ""
	}
	return fmt.Sprintf(" (%q)", field)
}

// member reports whether body holds value in field, or in any top-level
// member when field is "".
func member(body map[string]any, field, value string) bool {
	if field != "" {
		return body[field] == value
	}
	vals := make([]any, 0, len(body))
	for _, v := range body {
		vals = append(vals, v)
	}
	return slices.Contains(vals, any(value))
}
