package eventstore

import (
	"fmt"
	"strconv"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/gen"
	"github.com/onceproof/tck/internal/spec"
)

// idPair is two different ids that a common store shortcut takes for one.
type idPair struct {
	a, b  string
	class string // the shortcut, as a failure's first line names it
}

// The hash and fold classes TestIDPairsCollide checks (the table is internal/gen's,
// shared with the api suite's API-1.6).
const (
	classJavaHash = gen.PairJavaHash
	classFNV      = gen.PairFNV
	classCRC      = gen.PairCRC
	classSHA256   = gen.PairSHA256
	classMD5      = gen.PairMD5
	classCase     = gen.PairCase
	classAccent   = gen.PairAccent
	classNFKC     = gen.PairNFKC
)

// idPairs are ES-1.15's pairs (gen.IDPairs), each id ending in suffix.
func idPairs(suffix string) []idPair {
	var ps []idPair
	for _, p := range gen.IDPairs(suffix) {
		ps = append(ps, idPair{p.A, p.B, p.Class})
	}
	return ps
}

// pairLine names a pair for a failure's first line: both ids (abbreviated
// past abbrevAt characters) and the shortcut.
func pairLine(p idPair) string {
	return fmt.Sprintf("%s and %s (%s)", short(p.a), short(p.b), p.class)
}

// ruleDistinctIDs is ES-1.15.
func ruleDistinctIDs(r *spec.R, t target) {
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
