package eventstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/onsi/gomega"
	"pgregory.net/rapid"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/eskit"
	"github.com/onceproof/tck/internal/gen"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/stall"
)

// ES-4.2: two writers on two handles race multi-event appends at each next
// version of one aggregate while two readers on other handles load it and
// query its request ids. Every loaded stream must be the one appended,
// whole; and the history, with its call and return times, must be
// linearizable against the model (gen.Check, porcupine): a query that finds
// a request id, then a load that misses its stream, is a violation even if
// no single answer is torn.

// The ES-4.2 workload.
const (
	tornVersions  = 8               // versions per trial, each raced by both writers
	tornReads     = 60              // calls per reader per trial, at most
	tornTarget    = 200             // loads overlapping an append that a pass needs
	tornLeast     = 50              // below this at the cap, the rule is unknown
	tornCap       = 4 * time.Second // trials stop here
	tornCheckTime = 5 * time.Second // porcupine's budget per trial
	tornEvents    = 3               // events per stream, at least (up to 6)
)

// tornIn is one call of the ES-4.2 history.
type tornIn struct {
	Kind   string // "append", "load", "exists?"
	Stream es.Stream
	Req    string
}

// tornOut is what it returned.
type tornOut struct {
	Err    string   // "" success, a conflict name, or "error"
	Cmds   []string // a load's streams, by command id
	Exists bool
}

type tornState []es.Stream

func (s tornState) has(req string) bool {
	return slices.ContainsFunc(s, func(st es.Stream) bool { return st.RequestID == req })
}

var tornModel = gen.Model[tornState, tornIn, tornOut]{
	Init: func() tornState { return nil },
	Step: func(s tornState, in tornIn, out tornOut) []tornState {
		switch in.Kind {
		case "append":
			fits := in.Stream.Version == len(s)+1 && !s.has(in.Stream.RequestID)
			after := append(slices.Clip(s), in.Stream)
			switch {
			case out.Err == "" && fits:
				return []tornState{after}
			case out.Err == "":
				return nil
			case out.Err == "error" && fits: // indeterminate
				return []tornState{s, after}
			case fits:
				return nil // refused, yet nothing stood in its way
			}
			return []tornState{s}
		case "load":
			cmds := make([]string, len(s))
			for i, st := range s {
				cmds[i] = st.CommandID
			}
			if slices.Equal(cmds, out.Cmds) {
				return []tornState{s}
			}
			return nil
		}
		if out.Exists == s.has(in.Req) {
			return []tornState{s}
		}
		return nil
	},
	// An append that errored may still commit after its caller gave up.
	Pending: func(in tornIn, out tornOut) bool { return in.Kind == "append" && out.Err == "error" },
	Equal: func(a, b tornState) bool {
		return slices.EqualFunc(a, b, func(x, y es.Stream) bool { return x.CommandID == y.CommandID })
	},
	Describe: func(in tornIn, out tornOut) string {
		switch in.Kind {
		case "append":
			return fmt.Sprintf("append %s -> %s", describe(in.Stream), out.Err)
		case "load":
			return fmt.Sprintf("load -> %d streams", len(out.Cmds))
		}
		return fmt.Sprintf("exists? %s -> %v", short(in.Req), out.Exists)
	},
}

// tornTrial is one trial's outcome.
type tornTrial struct {
	torn           string // a loaded stream that is not the one appended
	calls          []gen.Call[tornIn, tornOut]
	overlapLoads   int // loads whose call overlapped an append
	overlapQueries int
	ops            []history.Op
}

func registerTorn(s *spec.Set, t target) {
	// A race: it counts loads that overlapped an append within a cap.
	s.ItRace("ES-4.2", func(r *spec.R) {
		f := open(r, t)
		handles := []es.EventStore{f.store}
		for range 3 {
			if t.OneHandle != "" {
				handles = append(handles, f.store)
				continue
			}
			h, err := t.Open(r.Context())
			r.Expect(err).NotTo(gomega.HaveOccurred(), "opening a handle")
			r.DeferCleanup(func() { _ = h.Close() })
			handles = append(handles, h)
		}
		if t.OneHandle != "" {
			r.Ev.Notef("one handle only (%s): writers and readers share it", t.OneHandle)
		}
		src := f.source()
		bodies := gen.Body(false)
		start := time.Now()
		trials, loads, queries, appends := 0, 0, 0, 0
		for loads < tornTarget && stall.Scheduled(start, time.Now()) < tornCap && r.Context().Err() == nil {
			trials++
			tr := tornRound(r.Context(), f, handles, src, bodies)
			loads += tr.overlapLoads
			queries += tr.overlapQueries
			for _, c := range tr.calls {
				if c.Input.Kind == "append" {
					appends++
				}
			}
			if tr.torn != "" {
				r.Ev.Smallest(tr.ops)
				r.Ev.Record(tr.ops)
				r.Expect(tr.torn == "").To(gomega.BeTrue(), "%s (trial %d, %s)", tr.torn, trials, replay(f.seed))
			}
			switch gen.Check(tornModel, tr.calls, tornCheckTime) {
			case gen.Violation:
				r.Ev.Smallest(tr.ops)
				r.Ev.Record(tr.ops)
				r.Expect(false).To(gomega.BeTrue(), "no order of the calls consistent with their times gives these answers: a read saw part of an append, or an answer went back in time (trial %d, %s)", trials, replay(f.seed))
			case gen.Undecided:
				r.Unknown("the linearizability check of trial %d ran out of its %s", trials, tornCheckTime)
			}
			if trials == 1 {
				r.Ev.Record(tr.ops)
			}
		}
		r.Ev.Figure("trials run", trials, "")
		r.Ev.Figure("multi-event appends", appends, "")
		r.Ev.Figure("loads overlapping an append", loads, "")
		r.Ev.Figure("request-id queries overlapping an append", queries, "")
		r.Ev.Figure("loads overlapping an append needed", tornTarget, "")
		r.Ev.Figure("instances (handles on one store)", 4, "")
		r.Ev.Figure("time spent", time.Since(start).Milliseconds(), "ms")
		if loads < tornLeast {
			r.Unknown("%d loads overlapped an append in %d trials (%s); at least %d are needed to say reads do not tear", loads, trials, time.Since(start).Round(time.Millisecond), tornLeast)
		}
		r.Ev.Notef("%d loads and %d request-id queries overlapped multi-event appends in %d trials: every stream read whole, every history linearizable", loads, queries, trials)
	})
}

// tornRound runs one trial on a fresh aggregate.
func tornRound(ctx context.Context, f *fixture, handles []es.EventStore, src *gen.Source, bodies *rapid.Generator[gen.Bytes]) tornTrial {
	agg := f.aggregate("torn")
	h := gen.NewHistory[tornIn, tornOut]()
	rec := history.New()
	var (
		mu       sync.Mutex
		appended = map[string]es.Stream{} // by command id, before the call
		reqs     []string
		torn     string
	)
	streams := make([][]es.Stream, 2)
	for w := range streams {
		for v := 1; v <= tornVersions; v++ {
			st := es.Stream{Aggregate: agg, Version: v, RequestID: f.req(fmt.Sprintf("w%d-v%d", w, v)), CommandID: "cmd-" + nonce()}
			for e := range tornEvents + src.Rand().IntN(4) {
				st.Events = append(st.Events, es.Event{Name: fmt.Sprintf("E%d", e+1), Body: gen.Draw(src, bodies).B})
			}
			streams[w] = append(streams[w], st)
			appended[st.CommandID] = st
			reqs = append(reqs, st.RequestID)
		}
	}
	var writers, readers sync.WaitGroup
	done := make(chan struct{})
	for w := range streams {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for _, st := range streams[w] {
				end := h.Begin(w, tornIn{Kind: "append", Stream: st})
				call := rec.Invoke(fmt.Sprintf("w%d@h%d", w+1, w+1), "append", describe(st))
				err := handles[w].Append(ctx, st)
				call.Complete(classify(err))
				out := tornOut{}
				if err != nil {
					out.Err = conflictName(err)
				}
				end(out)
			}
		}()
	}
	for rd := range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			store, actor := handles[2+rd], fmt.Sprintf("r%d@h%d", rd+1, rd+3)
			for i := 0; i < tornReads; i++ {
				select {
				case <-done:
					return
				default:
				}
				if i%2 == 0 {
					end := h.Begin(2+rd, tornIn{Kind: "load"})
					call := rec.Invoke(actor, "load", short(agg.ID))
					got, err := store.Load(ctx, agg, es.InitialVersion, eskit.MaxVersion)
					if err != nil {
						call.Info(err.Error())
						continue // not in the history: an error says nothing about what is stored
					}
					out := tornOut{}
					for _, st := range got {
						out.Cmds = append(out.Cmds, st.CommandID)
						mu.Lock()
						if _, what := diffStreams([]es.Stream{st}, []es.Stream{appended[st.CommandID]}); what != "" && torn == "" {
							torn = fmt.Sprintf("a load through %s during the appends returned version %d (command %s) torn: %s", actor, st.Version, st.CommandID, what)
						}
						mu.Unlock()
					}
					call.OK(fmt.Sprintf("%d streams, events %v", len(got), eventCounts(got)))
					end(out)
					continue
				}
				req := reqs[(i*7+rd)%len(reqs)]
				end := h.Begin(2+rd, tornIn{Kind: "exists?", Req: req})
				call := rec.Invoke(actor, "exists?", short(req))
				ok, err := store.RequestIDExists(ctx, agg, req)
				if err != nil {
					call.Info(err.Error())
					continue
				}
				call.OK(fmt.Sprint(ok))
				end(tornOut{Exists: ok})
			}
		}()
	}
	writers.Wait()
	close(done)
	readers.Wait()
	out := tornTrial{torn: torn, calls: h.Calls(), ops: rec.Ops()}
	var spans [][2]time.Duration
	for _, c := range out.calls {
		if c.Input.Kind == "append" {
			spans = append(spans, [2]time.Duration{c.Call, c.Return})
		}
	}
	for _, c := range out.calls {
		if c.Input.Kind == "append" {
			continue
		}
		if slices.ContainsFunc(spans, func(s [2]time.Duration) bool { return c.Call <= s[1] && s[0] <= c.Return }) {
			if c.Input.Kind == "load" {
				out.overlapLoads++
			} else {
				out.overlapQueries++
			}
		}
	}
	return out
}

func eventCounts(ss []es.Stream) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = fmt.Sprint(len(s.Events))
	}
	return strings.Join(parts, ",")
}
