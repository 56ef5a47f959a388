package eventstore

import (
	"fmt"
	"strconv"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/spec"
)

// idPair is two different ids that a common store shortcut takes for one.
type idPair struct {
	a, b  string
	class string // the shortcut, as a failure's first line names it
}

// The shortcut classes ES-1.15 names.
const (
	classJavaHash = "a Java String.hashCode collision"
	classFNV      = "an FNV-1a-32 collision"
	classCRC      = "a CRC32 (IEEE) collision"
	classLike     = "a SQL LIKE metacharacter where the other id has an ordinary character"
	classGlob     = "a glob or regex metacharacter where the other id has an ordinary character"
	classURL      = "a URL-reserved character and its encoded or decoded twin"
	classCharset  = "ids differing only in a letter outside Latin-1"
)

// idPairs are ES-1.15's pairs, each id ending in suffix (a common suffix
// keeps every hash collision below: Java's hashCode of equal-length
// strings, FNV-1a's and CRC32's running state). The FNV-1a-32 and CRC32
// pairs were found by a birthday search over "req-" and six characters of
// [a-z0-9]; TestIDPairsCollide checks that they collide.
func idPairs(suffix string) []idPair {
	ps := []idPair{
		{"Aa" + suffix, "BB" + suffix, classJavaHash},
		{"order-Aa-" + suffix, "order-BB-" + suffix, classJavaHash},
		{"AaAa" + suffix, "BBBB" + suffix, classJavaHash},
		{"x-AaBB-" + suffix, "x-BBAa-" + suffix, classJavaHash},
		{"req-6vlfaa" + suffix, "req-npdhaa" + suffix, classFNV},
		{"req-x98cda" + suffix, "req-dvdbpa" + suffix, classCRC},
		{"order_1" + suffix, "orderX1" + suffix, classLike},
		{"order%" + suffix, "order-12" + suffix, classLike},
		{"a%z" + suffix, "az" + suffix, classLike},
		{`a\_z` + suffix, `a_z` + suffix, classLike},
		{"order*" + suffix, "order-12" + suffix, classGlob},
		{"order?" + suffix, "order1" + suffix, classGlob},
		{"order[1]" + suffix, "order1" + suffix, classGlob},
		{"order[12]" + suffix, "order1" + suffix, classGlob},
		{"order.1" + suffix, "orderX1" + suffix, classGlob},
		{`order\d` + suffix, `orderd` + suffix, classGlob},
		{"a+b" + suffix, "a b" + suffix, classURL},
		{"a+b" + suffix, "a%2Bb" + suffix, classURL},
		{"a b" + suffix, "a%20b" + suffix, classURL},
		{"a/b" + suffix, "a%2Fb" + suffix, classURL},
		{"a%2Fb" + suffix, "a%252Fb" + suffix, classURL},
		{"p\u0430y" + suffix, "pay" + suffix, classCharset},              // Cyrillic а vs Latin a
		{"p\u0430y" + suffix, "p\u03b1y" + suffix, classCharset},         // Cyrillic а vs Greek α
		{"\u03b1\u03b2" + suffix, "\u03b3\u03b4" + suffix, classCharset}, // Greek
		{"\u8ba2\u5355" + suffix, "\u8a02\u55ae" + suffix, classCharset}, // CJK: simplified vs traditional
		{"pay\U0001F34E" + suffix, "pay\U0001F34F" + suffix, classCharset},
		{"e\u0301" + suffix, "\u00e9" + suffix, classCharset},      // a combining mark vs precomposed
		{"a\u0301" + suffix, "a\u0300" + suffix, classCharset},     // two combining marks
		{"\u1ebf" + suffix, "\u00ea\u0301" + suffix, classCharset}, // precomposed beyond Latin-1 vs decomposed
	}
	return ps
}

// pairLine names a pair for a failure's first line: both ids (abbreviated
// past abbrevAt characters) and the shortcut.
func pairLine(p idPair) string {
	return fmt.Sprintf("%s and %s (%s)", short(p.a), short(p.b), p.class)
}

// ruleDistinctIDs is ES-1.15.
func ruleDistinctIDs(r *spec.R, t Target) {
	f := open(r, t)
	// The rule's drawn request id ends every pair: the ids stay of the
	// rule's adversarial classes, and differ from run to run.
	pairs := idPairs("-" + f.req("pair"))
	for i, p := range pairs {
		for _, way := range [][2]string{{p.a, p.b}, {p.b, p.a}} {
			first, second := way[0], way[1]
			r.Check(func() {
				agg := f.aggregate("req-" + strconv.Itoa(i))
				s1, s2 := stream(agg, 1, first), stream(agg, 2, second)
				err := f.append("client", s1)
				r.Expect(err == nil).To(gomega.BeTrue(), "%s: the request id %s on a new aggregate must be stored, got %s", pairLine(p), short(first), said(err, 60))
				err = f.append("client", s2)
				r.Expect(err == nil).To(gomega.BeTrue(), "%s: after %s, the request id %s at version 2 is another request id and must be stored, got %s", pairLine(p), short(first), short(second), said(err, 60))
				r.Expect(f.exists(agg, first)).To(gomega.BeTrue(), "%s: RequestIDExists must find %s, stored at version 1", pairLine(p), short(first))
				r.Expect(f.exists(agg, second)).To(gomega.BeTrue(), "%s: RequestIDExists must find %s, stored at version 2", pairLine(p), short(second))
				f.expectHistory(agg, []es.Stream{s1, s2}, pairLine(p))

				// A fresh aggregate holding the first only.
				only := f.aggregate("only-" + strconv.Itoa(i))
				f.mustAppend(stream(only, 1, first))
				r.Expect(f.exists(only, second)).To(gomega.BeFalse(), "%s: RequestIDExists must not find %s on an aggregate that stored %s only", pairLine(p), short(second), short(first))

				// The pair as aggregate ids: two aggregates, the same
				// request id on each.
				base := f.aggregate("agg-" + strconv.Itoa(i))
				ga, gb := base, base
				ga.ID, gb.ID = first+base.ID, second+base.ID
				ca, cb := stream(ga, 1, f.req("create")), stream(gb, 1, f.req("create"))
				err = f.append("client", ca)
				r.Expect(err == nil).To(gomega.BeTrue(), "%s as aggregate ids: a create of %s must be stored, got %s", pairLine(p), short(ga.ID), said(err, 60))
				err = f.append("client", cb)
				r.Expect(err == nil).To(gomega.BeTrue(), "%s as aggregate ids: after %s, a create of %s is another aggregate and must be stored, got %s", pairLine(p), short(ga.ID), short(gb.ID), said(err, 60))
				f.expectHistory(ga, []es.Stream{ca}, pairLine(p)+" as aggregate ids")
				f.expectHistory(gb, []es.Stream{cb}, pairLine(p)+" as aggregate ids")
			})
		}
	}
	if r.Failed() {
		return
	}
	classes := map[string]int{}
	for _, p := range pairs {
		classes[p.class]++
	}
	r.Ev.Figure("pairs (each stored both ways, as request ids and as aggregate ids)", len(pairs), "")
	r.Ev.Notef("%d pairs of ids equal under a store shortcut (%d classes) were two request ids on one aggregate and two aggregates, stored in both orders; RequestIDExists told each apart", len(pairs), len(classes))
}
