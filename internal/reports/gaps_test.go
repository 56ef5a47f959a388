package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// brokerResults is a broker run as Redis 7 and an embedded NATS end it:
// on Redis the de-dupe, nak, term and max-deliver rules are not applicable
// for a missing mechanism (BR-1.6 also lacks the kit's proxy, BR-7.3 also
// dead-letter); on NATS only rules of other products' vocabulary are
// (pending-list, mandatory-return), which leave nothing to anyone.
func brokerResults() *Report {
	na := func(tg, id string, missing ...catalog.Capability) verdict.Result {
		m := catalog.MustLookup(id)
		var ms []string
		for _, c := range missing {
			ms = append(ms, string(c))
		}
		return verdict.Result{Rule: id, Suite: "broker", Target: tg, Level: string(m.Level), Kind: string(m.Kind), Title: m.Title,
			Verdict: verdict.NotApplicable, Reason: "the target does not declare the capability " + strings.Join(ms, ", "), Missing: ms}
	}
	pass := func(tg, id string) verdict.Result {
		m := catalog.MustLookup(id)
		return verdict.Result{Rule: id, Suite: "broker", Target: tg, Level: string(m.Level), Kind: string(m.Kind), Title: m.Title, Verdict: verdict.Pass, Reason: "all checks held"}
	}
	r := &Report{
		Run: Run{Command: "tck run --suite broker", Suites: []string{"broker"}},
		Targets: []Target{
			{Info: target.Info{Name: "broker/nats", Suite: "broker", Mode: target.Embedded}, Status: "ran"},
			{Info: target.Info{Name: "broker/redis", Suite: "broker", Mode: target.External}, Status: "ran"},
		},
		Results: []verdict.Result{
			na("broker/redis", "BR-1.6", catalog.CapBrokerDedupe, catalog.CapBrokerFaultProxy),
			na("broker/redis", "BR-1.1", catalog.CapBrokerDedupe),
			pass("broker/redis", "BR-2.1"),
			na("broker/redis", "BR-2.4", catalog.CapBrokerNakDelay),
			na("broker/redis", "BR-2.5", catalog.CapBrokerTerm),
			na("broker/redis", "BR-2.6", catalog.CapBrokerMaxDeliver),
			na("broker/redis", "BR-7.3", catalog.CapBrokerDeadLetter, catalog.CapBrokerMaxDeliver),
			na("broker/redis", "BR-7.1", catalog.CapBrokerMandatory),
			pass("broker/nats", "BR-1.1"),
			na("broker/nats", "BR-4.1", catalog.CapBrokerPendingList),
			na("broker/nats", "BR-7.1", catalog.CapBrokerMandatory),
		},
	}
	r.Finish()
	return r
}

// TestGapsOnTheFirstScreen: each missing mechanism of Redis is one line on
// report.md's and report.html's first screen (before the first section),
// naming what it leaves unprotected and who must compensate, with the
// rules that needed it; NATS, where every mechanism the table knows
// applies, has none.
func TestGapsOnTheFirstScreen(t *testing.T) {
	r := brokerResults()
	var got []string
	for _, g := range r.Gaps {
		got = append(got, g.Target+" "+string(g.Capability)+" "+strings.Join(g.Rules, ","))
	}
	want := []string{
		"broker/redis dedupe-window BR-1.1,BR-1.6",
		"broker/redis nak-delay BR-2.4",
		"broker/redis term BR-2.5",
		"broker/redis max-deliver BR-2.6,BR-7.3",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("gaps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	dedupe := r.Gaps[0]
	if dedupe.Kind != catalog.GapUnprotected || !strings.Contains(dedupe.Leaves, "second entry") || !strings.Contains(dedupe.Compensate, "every consumer de-dupes") || !strings.Contains(dedupe.Source, "seeds/002") {
		t.Errorf("the de-dupe gap does not say what it leaves and to whom: %+v", dedupe)
	}

	var md, html bytes.Buffer
	if err := Markdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&html, r); err != nil {
		t.Fatal(err)
	}
	mdFirst, _, _ := strings.Cut(md.String(), "\n## ")
	htmlFirst, _, _ := strings.Cut(html.String(), "<h2")
	for _, g := range r.Gaps {
		if !strings.Contains(mdFirst, "not protected on broker/redis: **"+g.Missing+"**") || !strings.Contains(mdFirst, g.Compensate) {
			t.Errorf("report.md's first screen lacks the %s line:\n%s", g.Capability, mdFirst)
		}
		if !strings.Contains(htmlFirst, "</b> on broker/redis: <b>"+g.Missing+"</b>") {
			t.Errorf("report.html's first screen lacks the %s line", g.Capability)
		}
	}
	for _, first := range []string{mdFirst, htmlFirst} {
		if strings.Contains(first, "on broker/nats") {
			t.Errorf("a gap named on NATS, where every mechanism applies:\n%s", first)
		}
	}

	// A NATS run alone: no gap, and no line.
	nats := brokerResults()
	var kept []verdict.Result
	for _, res := range nats.Results {
		if res.Target == "broker/nats" {
			kept = append(kept, res)
		}
	}
	nats.Results, nats.Targets = kept, nats.Targets[:1]
	nats.Finish()
	md.Reset()
	if err := Markdown(&md, nats); err != nil {
		t.Fatal(err)
	}
	if len(nats.Gaps) != 0 || strings.Contains(md.String(), "not protected") {
		t.Errorf("NATS has gaps %+v", nats.Gaps)
	}
}
