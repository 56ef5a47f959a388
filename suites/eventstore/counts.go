package eventstore

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/eskit"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/stall"
)

// ES-1.18's aggregate: 66 appends of 1000 events pass the event counts
// 32767, 32768, 65535 and 65536 (a 16-bit position or count) cheaply, in
// 66 calls where ES-1.17 needs 65540; the bodies are a few bytes each.
const (
	countsPer     = 1000
	countsAppends = 66
	countsEvents  = countsPer * countsAppends
	// The pace is measured after this many appends and versionsProbeTime.
	countsProbe = 3
)

// countRanges are the version ranges ES-1.18 loads across the event
// positions 32767 and 32768 (in v33) and 65535 and 65536 (in v66).
var countRanges = [][2]int{{33, 33}, {32, 34}, {66, 66}, {65, 66}, {33, 66}, {1, 33}}

// countEvent is the event at position p (1-based) of the aggregate: its
// body says p, so one that comes back elsewhere names where it belongs.
func countEvent(p int) es.Event {
	return es.Event{Name: "E" + strconv.Itoa(p%7), Body: []byte(`{"seq":` + strconv.Itoa(p) + `}`)}
}

// ruleManyEvents is ES-1.18.
func ruleManyEvents(r *spec.R, t target) {
	r.DeferCleanup(stall.Hold())
	f := open(r, t)
	agg := f.aggregate("many")
	base := f.req("n")
	hs := f.handles()
	start := time.Now()
	budget := versionsBudget(t)
	if dl, ok := r.Context().Deadline(); ok {
		budget = min(budget, time.Until(dl)*versionsShare/100)
	}
	streams := make([]es.Stream, 0, countsAppends)
	measured := false
	for v := 1; v <= countsAppends; v++ {
		s := es.Stream{Aggregate: agg, Version: v, RequestID: base + "-" + strconv.Itoa(v), CommandID: "cmd-" + nonce(), Events: make([]es.Event, countsPer)}
		for i := range s.Events {
			s.Events[i] = countEvent((v-1)*countsPer + i + 1)
		}
		call := f.rec.Invoke("filler", "append", fmt.Sprintf("v%d: events %d..%d", v, (v-1)*countsPer+1, v*countsPer))
		err := hs[v%len(hs)].Append(f.ctx, s)
		if err != nil && !isConflict(err) && f.ctx.Err() == nil {
			err = f.settle(s, err)
		}
		call.Complete(classify(err))
		if err != nil {
			if f.ctx.Err() != nil {
				r.Unknown("the rule's deadline came after %d of %d appends (%d events; the kit was late %s): the loads were not reached", v-1, countsAppends, (v-1)*countsPer, stall.Since(start).Total.Round(time.Millisecond))
			}
			if isConflict(err) {
				r.Expect(err == nil).To(gomega.BeTrue(), "Append(v%d) of events %d..%d after v%d was stored: %s; an aggregate must take more than %d events", v, (v-1)*countsPer+1, v*countsPer, v-1, said(err, 60), (v-1)*countsPer)
			}
			r.Unknown("Append(v%d) of events %d..%d failed twice with %s: counts past %d were not reached", v, (v-1)*countsPer+1, v*countsPer, said(err, 80), (v-1)*countsPer)
		}
		streams = append(streams, s)
		r.Progress(v, countsAppends, "appends")
		now := time.Now()
		sched := stall.Scheduled(start, now)
		if !measured && v >= countsProbe && sched >= versionsProbeTime && v < countsAppends {
			measured = true
			need := sched * countsAppends / time.Duration(v)
			if need > budget {
				rate := float64(v) / sched.Seconds()
				r.Ev.Figure("events reached (aimed at)", fmt.Sprintf("%d (%d)", v*countsPer, countsEvents), "")
				r.Ev.Figure("appends per second", fmt.Sprintf("%.1f", rate), "")
				skipForPace(r, fmt.Sprintf("%.1f appends of %d events a second over the first %d", rate, countsPer, v), fmt.Sprintf("the %d appends of %d events", countsAppends, countsPer), need, budget)
			}
		}
		if v < countsAppends && (sched >= versionsOver*budget || now.Sub(start) >= 3*versionsOver*budget) {
			r.Unknown("the appends ran past %d times their budget of %s at v%d, %d events (the kit was late %s of %s): counts past %d were not reached", versionsOver, budget.Round(time.Second), v, v*countsPer, stall.Since(start).Total.Round(time.Millisecond), now.Sub(start).Round(time.Millisecond), v*countsPer)
		}
	}
	r.Ev.Figure("events in one aggregate", countsEvents, "")
	r.Ev.Figure("fill time", time.Since(start).Milliseconds(), "ms")

	loads := append([][2]int{{es.InitialVersion, eskit.MaxVersion}}, countRanges...)
	for _, rg := range loads {
		from, to := rg[0], rg[1]
		what := fmt.Sprintf("Load(%d, %d)", from, to)
		if to == eskit.MaxVersion {
			what = "Load(1, max)"
		}
		got, err := f.load(agg, from, to)
		if err != nil {
			r.Unknown("%s of the %d events failed (%s): not checked", what, countsEvents, said(err, 80))
		}
		want := streams[from-1 : min(to, countsAppends)]
		if diff := diffEvents(got, want); diff != "" {
			r.Expect(diff == "").To(gomega.BeTrue(), "%s: %s", what, diff)
		}
		f.expectStreams(got, want, what)
		if r.Failed() {
			return
		}
	}
	var rs []string
	for _, rg := range countRanges {
		rs = append(rs, fmt.Sprintf("[%d, %d]", rg[0], rg[1]))
	}
	r.Ev.Notef("one aggregate took %d events in %d appends of %d; the whole history and the version ranges %s (across the event positions 32767, 32768, 65535 and 65536) loaded back with every event once, in order, with its name and body", countsEvents, countsAppends, countsPer, strings.Join(rs, ", "))
}

// diffEvents compares the events of got and want in one run, whatever the
// streams they come in, and names the first position that differs and what
// came there ("" when equal).
func diffEvents(got, want []es.Stream) string {
	type at struct {
		v  int
		ev es.Event
	}
	flat := func(h []es.Stream) []at {
		var out []at
		for _, s := range h {
			for _, e := range s.Events {
				out = append(out, at{s.Version, e})
			}
		}
		return out
	}
	g, w := flat(got), flat(want)
	first := 1 // the aggregate position of want's first event
	if len(want) > 0 {
		first = (want[0].Version-1)*countsPer + 1
	}
	for i := range w {
		p := first + i
		if i >= len(g) {
			return fmt.Sprintf("%d events of %d came back: event %d (v%d) and after it missing%s", len(g), len(w), p, w[i].v, pastEdge(p))
		}
		if g[i].v != w[i].v || g[i].ev.Name != w[i].ev.Name || string(g[i].ev.Body) != string(w[i].ev.Body) {
			return fmt.Sprintf("event %d came back as %s (v%d), want %s (v%d)", p, clip(g[i].ev), g[i].v, clip(w[i].ev), w[i].v)
		}
	}
	if len(g) > len(w) {
		return fmt.Sprintf("%d events of %d came back: %s of v%d is one too many", len(g), len(w), clip(g[len(w)].ev), g[len(w)].v)
	}
	return ""
}

// clip names an event by its name and body, cut to a few dozen
// characters, quoted only when not plain printable text.
func clip(e es.Event) string {
	s := e.Name + " " + string(e.Body)
	if r := []rune(s); len(r) > 32 {
		s = string(r[:32]) + "…"
	}
	if q := strconv.Quote(s); q[1:len(q)-1] != strings.ReplaceAll(s, `"`, `\"`) {
		return q
	}
	return s
}

// pastEdge names the 16-bit count an event position is past, if any.
func pastEdge(p int) string {
	switch {
	case p > edge16-1:
		return fmt.Sprintf(" (past %d)", edge16-1)
	case p > edge15-1:
		return fmt.Sprintf(" (past %d)", edge15-1)
	}
	return ""
}
