package api

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/apidesc"
	"github.com/onceproof/tck/internal/gen"
)

// API-1.6's twins with structure (issue 37): pairs of ids that a shortcut
// takes for one (a decoding, a pattern, a hash, a narrower charset), from
// the table the event-store suite's ES-1.15 stores (gen.IDPairs) and a few
// URL-reserved pairs of the api's own. Each id is a pair's core, then a
// drawn id of the place's classes (the same for both: hash collisions
// survive a common suffix).
const (
	twinURL    = "URL twin (a reserved character and its percent-encoded form)"
	twinMeta   = "metacharacter twin (_ % * ? [ ] \\ where the other id has another character)"
	twinHash   = "hash twin (a Java String.hashCode, FNV-1a or CRC32 collision)"
	twinScript = "script twin (letters differing only in script or code point)"
)

// apiPairs are the URL-reserved pairs the event-store table lacks: a
// query string's separators and a fragment mark.
var apiPairs = []gen.IDPair{
	{A: "a?b", B: "a%3Fb", Class: gen.PairURL},
	{A: "a#b", B: "a%23b", Class: gen.PairURL},
	{A: "a&b", B: "a%26b", Class: gen.PairURL},
	{A: "caf\u00e9", B: "cafe", Class: gen.PairCharset},                     // Latin-1 vs ASCII
	{A: "\u039fRDER", B: "ORDER", Class: gen.PairCharset},                   // Greek Omicron vs Latin O
	{A: "p\u0430y-\U0001F642", B: "pay-\U0001F642", Class: gen.PairCharset}, // Cyrillic а beside an emoji
}

// pairClasses are the gen classes each pair kind takes. Two are not sent:
// gen.PairCase, because twinCase already swaps the case of every letter of
// a drawn id, in every place; gen.PairSHA256 and gen.PairMD5, because a
// 32-bit cut of a longer hash collides for the one suffix it was searched
// for, and the api's ids go on with a drawn id of their own (the Java,
// FNV-1a and CRC32 pairs survive it).
var pairClasses = map[string][]string{
	twinURL:    {gen.PairURL},
	twinMeta:   {gen.PairLike, gen.PairGlob},
	twinHash:   {gen.PairJavaHash, gen.PairFNV, gen.PairCRC},
	twinScript: {gen.PairCharset, gen.PairAccent, gen.PairNFKC},
}

// pairKinds are the pair kinds with at least one pair the id's place
// carries.
func (v *values) pairKinds() []string {
	var out []string
	for _, k := range []string{twinURL, twinMeta, twinHash, twinScript} {
		if len(v.pairsOf(k)) > 0 {
			out = append(out, k)
		}
	}
	return out
}

// pairsOf are kind's pairs (their cores) that the id's place carries
// losslessly: a header value is printable ASCII (RFC 9110; the
// Idempotency-Key draft's sf-string), a path segment holds no "/" (nor
// "%2F", which many routers decode before routing), no space and no "\"
// (which some proxies turn into "/"); a body or a query carries any string.
func (v *values) pairsOf(kind string) []gen.IDPair {
	var out []gen.IDPair
	for _, p := range append(gen.IDPairs(""), apiPairs...) {
		if !slices.Contains(pairClasses[kind], p.Class) || !v.carries(p.A) || !v.carries(p.B) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// carries says whether the id's place carries core (the start of an id)
// byte for byte.
func (v *values) carries(core string) bool {
	in := v.d.ID().In
	if in == apidesc.InBody || in == apidesc.InQuery {
		return true
	}
	for _, r := range core {
		if r < 0x20 || r > 0x7e {
			return false
		}
	}
	return in != apidesc.InPath || !strings.ContainsAny(core, "/ \\") && !strings.Contains(strings.ToUpper(core), "%2F")
}

// twinTrial is one pair of API-1.6: two ids the contract keeps apart.
type twinTrial struct {
	kind       string
	label      string // names the pair in a failure's first line
	base, twin intent
}

// twinTrials are API-1.6's pairs: one twin of every kind of twinKinds,
// then every pair of every pair kind its place carries. A metacharacter
// pair goes both ways (a pattern lookup matches only when the id holding
// the metacharacter comes second); the others alternate their order.
func (v *values) twinTrials(rule string) ([]twinTrial, error) {
	var out []twinTrial
	for _, kind := range v.twinKinds() {
		base, twin, ok := v.twinPair(rule, kind)
		if !ok {
			return nil, fmt.Errorf("the kit could not make a %s", kind) // a defect of the kit's values
		}
		label := fmt.Sprintf("%s %s/%s", shortKind(kind), abbrevID(base.id, 24), abbrevID(twin.id, 24))
		if base.scope != twin.scope {
			label = fmt.Sprintf("%s (%s, %s)/(%s, %s)", shortKind(kind), abbrevID(base.scope, 12), abbrevID(base.id, 12), abbrevID(twin.scope, 12), abbrevID(twin.id, 12))
		}
		out = append(out, twinTrial{kind: kind, label: label, base: base, twin: twin})
	}
	for _, kind := range v.pairKinds() {
		for i, p := range v.pairsOf(kind) {
			ways := [][2]string{{p.A, p.B}, {p.B, p.A}}
			if kind != twinMeta {
				ways = ways[i%2 : i%2+1]
			}
			for _, w := range ways {
				base, twin := v.pairIntents(rule, w[0], w[1])
				label := fmt.Sprintf("%s %q/%q", shortKind(kind), w[0], w[1])
				out = append(out, twinTrial{kind: kind, label: label, base: base, twin: twin})
			}
		}
	}
	return out, nil
}

// pairIntents are two intents under one scope whose ids are a and b, each
// followed by the same drawn id (a hash collision survives a common
// suffix), with payloads of their own.
func (v *values) pairIntents(rule, a, b string) (base, twin intent) {
	suffix := "-" + v.anyID(rule)
	base = v.intentWith(a + suffix)
	twin = v.intentWith(b + suffix)
	twin.scope = base.scope
	twin.body = v.d.Payload(twin.id, twin.fields)
	return base, twin
}

// shortKind is a twin kind without its explanation.
func shortKind(kind string) string {
	s, _, _ := strings.Cut(kind, " (")
	return s
}

// abbrevID shows an id of more than n characters by its first and last
// n/2-2 (a tail twin differs at its end), quoted.
func abbrevID(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return fmt.Sprintf("%q", s)
	}
	r, k := []rune(s), n/2-2
	return fmt.Sprintf("%q", string(r[:k])+"…"+string(r[len(r)-k:]))
}

// seedTag ends a failure's first line: tck run --seed replays the rule's
// values and the replicas each step went to.
func (u *run) seedTag() string { return fmt.Sprintf(" (seed %d)", u.seed) }

// brief is an answer in a few words for a failure's first line.
func brief(a answer) string {
	if a.Err != nil {
		return "no answer"
	}
	if title, ok := object(a.Body)["title"].(string); ok {
		return fmt.Sprintf("%d %q", a.Status, clip(title, 36)) // a problem+json refusal
	}
	return fmt.Sprintf("%d %s", a.Status, clip(string(a.Body), 36))
}

// repeatWrong says in a few words how a, an answer to a repeat of the
// request first answered, differs from the declared repeat answer ("" when
// it does not).
func repeatWrong(d *apidesc.Description, a, first answer) string {
	if d.Contract == apidesc.Reject409 {
		if !slices.Contains(d.Answers.Repeat, a.Status) {
			return brief(a)
		}
		return ""
	}
	switch {
	case a.Status != first.Status:
		return brief(a)
	case string(a.Body) != string(first.Body):
		return "another body: " + clip(string(a.Body), 36)
	case replayedHeaders(a, first) != "":
		return clip(replayedHeaders(a, first), 60)
	}
	return ""
}

// declaredRepeat is the declared repeat answer in a few words.
func declaredRepeat(d *apidesc.Description) string {
	if d.Contract == apidesc.Reject409 {
		return statusList(d.Answers.Repeat)
	}
	return "the first response"
}

// twins runs trial k of API-1.6 over the replicas: the first id created on
// one, the twin on the next, then the reads, repeats and counts each on
// the replica after (offsets 1 to 6 from k). With two replicas every step
// after a creation goes to the replica that did not create that id, and as
// k turns every replica serves every kind of step. With one, every step
// goes to it.
func (u *run) twins(ctx context.Context, reps []*client, k int, tr twinTrial) {
	at := func(step int) *client { return reps[(k+step)%len(reps)] }
	r, d := u.r, u.d
	cb, ct := at(0), at(1)
	first := u.answered(cb.create(ctx, cb.actor, tr.base.id, tr.base.scope, tr.base.body), "the first id of "+tr.label)
	r.Expect(d.IsCreated(first.Status)).To(gomega.BeTrue(), "%s: the first id%s must create, got %s%s", tr.label, cb.where(), brief(first), u.seedTag())
	second := u.answered(ct.create(ctx, ct.actor, tr.twin.id, tr.twin.scope, tr.twin.body), "the twin of "+tr.label)
	r.Expect(d.IsCreated(second.Status)).To(gomega.BeTrue(), "%s: the twin%s must create (the first%s), got %s%s", tr.label, ct.where(), cb.where(), brief(second), u.seedTag())
	u.twinRead(ctx, at(1), tr.base, "the first id", tr.label)
	u.twinRead(ctx, at(2), tr.twin, "the twin", tr.label)
	// One id: the same bytes again are a repeat, of each.
	u.twinRepeat(ctx, at(3), tr.base, first, "the first id", tr.label)
	u.twinRepeat(ctx, at(4), tr.twin, second, "the twin", tr.label)
	u.twinCount(ctx, at(5), tr.base, "the first id", tr.label)
	u.twinCount(ctx, at(6), tr.twin, "the twin", tr.label)
}

func (u *run) twinRead(ctx context.Context, c *client, in intent, what, label string) {
	a := u.answered(c.read(ctx, in.id, in.scope), "the read of "+what+" of "+label)
	found := slices.Contains(u.d.Read.Found, a.Status)
	u.r.Expect(found).To(gomega.BeTrue(), "%s: the read of %s%s must find it, got %s%s", label, what, c.where(), brief(a), u.seedTag())
	diff := shows(a.Body, in.body)
	u.r.Expect(diff == "").To(gomega.BeTrue(), "%s: the read of %s%s shows another payload (%s)%s", label, what, c.where(), clip(diff, 24), u.seedTag())
}

func (u *run) twinRepeat(ctx context.Context, c *client, in intent, first answer, what, label string) {
	a := u.answered(c.create(ctx, c.actor, in.id, in.scope, in.body), "the repeat of "+what+" of "+label)
	u.compare(a, first)
	wrong := repeatWrong(u.d, a, first)
	u.r.Expect(wrong == "").To(gomega.BeTrue(), "%s: %s again%s (the same bytes) must get %s, got %s%s", label, what, c.where(), declaredRepeat(u.d), wrong, u.seedTag())
}

func (u *run) twinCount(ctx context.Context, c *client, in intent, what, label string) {
	n, listed, a, err := c.count(ctx, in.id, in.scope)
	if a.Err != nil {
		u.r.Unknown("the service did not answer the count of %s of %s: %v", what, label, a.Err)
	}
	u.r.Expect(err).NotTo(gomega.HaveOccurred(), "%s: counting the resources of %s%s", label, what, c.where())
	if !listed {
		u.r.Ev.Notef("the description declares no list: one resource is inferred from the read by id, which cannot show a second one")
	}
	u.r.Expect(n == 1).To(gomega.BeTrue(), "%s: %d resources carry %s%s, want 1%s", label, n, what, c.where(), u.seedTag())
}
