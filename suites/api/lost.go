package api

import (
	"bytes"
	"net/http"
	"slices"
	"time"

	"github.com/onceproof/tck/internal/httpfault"
	"github.com/onceproof/tck/internal/spec"
)

// registerLost is API-3.1: the seed's timeout flow (超时后的查询与重试) on a
// response the kit's fault proxy lost.
func registerLost(s *spec.Set, t Target) {
	s.It("API-3.1", func(r *spec.R) {
		u := begin(r, t)
		d := u.d
		proxy, err := httpfault.StartTLS(t.URL, t.TLS)
		if err != nil {
			r.Unknown("the kit could not start its fault proxy: %v", err)
		}
		r.DeferCleanup(func() { _ = proxy.Close() })
		in := u.v.newIntent(r.ID)
		lost := proxy.LoseNext(func(req *http.Request, body []byte) bool {
			return req.Method == d.Create.Method && bytes.Equal(body, in.body)
		})
		// A connection of its own: the request is sent once, never resent
		// by net/http on a reused connection.
		via := u.c.with(proxy.URL(), false)
		defer via.close()
		a := via.create(r.Context(), "kit", in.id, in.scope, in.body)
		var dropped httpfault.Dropped
		select {
		case dropped = <-lost:
		case <-time.After(10 * time.Second):
			r.Unknown("the fault proxy did not see the request whose response it was to lose (the kit's client got %s)", a)
		}
		if a.Err == nil {
			r.Unknown("the fault proxy forwarded the request but the kit's client still got an answer (%s); the response was not lost", a)
		}
		u.c.rec.Note("proxy", "lost the response", in.id, clip(string(dropped.Body), 160))
		r.Ev.Notef("the client saw %v; the service had answered %d: the outcome is unknown to the client, as after a timeout", a.Err, dropped.Status)
		if !d.IsCreated(dropped.Status) {
			r.Unknown("the request whose response was lost was not a creation (the service answered %d %s); see API-1.1", dropped.Status, clip(string(dropped.Body), 160))
		}

		// 1. Query the authoritative state by the stable id.
		u.readShows(in, "after the lost response (the query before any retry)")
		// 2. Retry with the same id: the declared answer, no second resource.
		again := u.answered(u.c.create(r.Context(), "kit", in.id, in.scope, in.body), "the retry with the same id")
		u.repeated(again, answer{Status: dropped.Status, Header: dropped.Header, Body: dropped.Body}, in, "the retry with the same id after a lost response")
		u.one(in, "after the retry with the same id")

		// 3. What the seed forbids: a retry under a fresh id. It is made to
		// show the hazard, not as a check of the service.
		fresh := in.withID(d, in.id+"-fresh")
		b := u.c.create(r.Context(), "kit", fresh.id, fresh.scope, fresh.body)
		switch {
		case b.Err != nil:
			r.Ev.Notef("the retry with a fresh id got no answer: %v", b.Err)
		case d.IsCreated(b.Status):
			if rb := u.c.read(r.Context(), fresh.id, fresh.scope); rb.Err == nil && slices.Contains(d.Read.Found, rb.Status) {
				r.Ev.Hazard("a retry with a fresh id after the lost response created a second resource for one intent: ids %s and %s both read back (不要在超时后仅为绕过重复检查而生成新 requestId)", in.id, fresh.id)
			}
		default:
			r.Ev.Notef("the retry with a fresh id was answered %s (the service did not treat it as a new request; API-3.2 checks identity by id)", b)
		}
		r.Ev.Notef("after the lost response the read by id %s found the resource, the retry with the same id got %d, and one resource carries the id", in.id, again.Status)
	})
}
