// Package httpsinks runs the consumer suite's side-effect sinks as real HTTP
// services on loopback, for a consumer the kit drives as a black box (its
// own process): a search index with a document API and external versions,
// and a push-notification endpoint that is not idempotent. Every call is
// recorded; the documents and the effects per (message, version, scope) are
// what the rules judge.
//
// The API (all bodies JSON; BASE is a client's base URL, see Server.Base):
//
//	PUT  BASE/index/docs/{id}                           {"version":N,"body":"..."}  store whatever is there
//	PUT  BASE/index/docs/{id}?version=N&version_type=external
//	                                                     store only if the stored version is lower than N,
//	                                                     else 409 {"error":"version_conflict", "current":M}
//	                                                     (the comparison and the write are one atomic step,
//	                                                     as a search engine's external versioning is)
//	GET  BASE/index/docs/{id}                            200 {"id","version","body"} or 404
//	POST BASE/notify                                     {"messageId","version","text"}: 202 {"id":n};
//	                                                     every call is one more notification a user sees
//	GET  BASE/notify/count?messageId=M&version=V         200 {"count":n}: how many went out for (M, V)
//
// A write answers 200 {"result":"created"|"updated"|"noop","version":N}.
// The document id must be the message id and the version the event's
// version; a notification names the message and version it is about.
//
// Hooks let the kit act when a call arrives, before it is applied, and after
// it is applied and before it is answered: kill the consumer there, answer
// with an error (503, nothing applied), or lose the answer (the connection
// closes without one; the effect stays).
package httpsinks

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/sinks"
)

// Stage is where in a call a hook runs.
type Stage string

const (
	BeforeApply Stage = "before-apply" // the call arrived; nothing applied yet
	AfterApply  Stage = "after-apply"  // applied (or refused with 409); not answered yet
)

// Action is what a hook wants done with the call.
type Action int

const (
	Proceed    Action = iota // go on as normal
	FailCall                 // BeforeApply only: answer 503 and apply nothing
	DropAnswer               // close the connection without an answer (what was applied stays)
)

// Kinds of calls, as recorded.
const (
	KindIndexPut   = "index put"    // an unconditional document write
	KindIndexPutV  = "index put-v"  // a write with an external version
	KindIndexGet   = "index get"    //
	KindNotify     = "notify"       // a notification sent
	KindNotifyRead = "notify count" // a query of what was sent
)

// Call is one recorded call.
type Call struct {
	Seq       int       `json:"seq"`
	At        time.Time `json:"at"`
	Client    string    `json:"client"` // the path prefix of the client's base URL
	Kind      string    `json:"kind"`
	MessageID string    `json:"messageId,omitempty"`
	Version   int       `json:"version,omitempty"`
	Status    int       `json:"status"`            // the answer's status; 0 when none was sent
	Outcome   string    `json:"outcome,omitempty"` // "applied", "noop", "conflict", "failed by the kit", "answer lost", "client gone"...
}

// Effect reports whether the call is a side-effect call (a write or a send).
func (c Call) Effect() bool {
	return c.Kind == KindIndexPut || c.Kind == KindIndexPutV || c.Kind == KindNotify
}

// Scope is the side-effect scope of the call (co.ScopeIndex or co.ScopeNotify).
func (c Call) Scope() string {
	if strings.HasPrefix(c.Kind, "index") {
		return co.ScopeIndex
	}
	return co.ScopeNotify
}

// Hook is called for every call at both stages; it may block (the call
// waits, e.g. while the kit kills the client).
type Hook func(c Call, stage Stage) Action

// Server is the index and the notifier behind one loopback listener.
type Server struct {
	srv *http.Server
	ln  net.Listener

	mu      sync.Mutex
	docs    map[string]co.Doc
	effects []sinks.Effect
	sent    map[string]int // "message@version" -> notifications
	calls   []Call
	hook    Hook
}

// Start listens on a free loopback port.
func Start() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("httpsinks: listening on loopback: %w", err)
	}
	s := &Server{ln: ln, docs: map[string]co.Doc{}, sent: map[string]int{}}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Addr is host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Base is the base URL for one client: its calls are recorded under
// client, so one server tells two consumer processes apart.
func (s *Server) Base(client string) string { return "http://" + s.Addr() + "/" + client }

// Close stops listening and closes every connection.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		return s.srv.Close()
	}
	return nil
}

// SetHook installs h (nil: none).
func (s *Server) SetHook(h Hook) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = h
}

// Docs returns a copy of every stored document.
func (s *Server) Docs() map[string]co.Doc {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]co.Doc, len(s.docs))
	for k, v := range s.docs {
		out[k] = v
	}
	return out
}

// Effects returns every effect so far: an index write that changed the
// stored document (a write leaving it as it was is not one), and every
// notification.
func (s *Server) Effects() []sinks.Effect {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sinks.Effect(nil), s.effects...)
}

// Calls returns every call so far, in arrival order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

type docBody struct {
	Version int    `json:"version"`
	Body    string `json:"body"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	client, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	c := Call{Client: client}
	var apply func() (status int, answer any)
	switch {
	case strings.HasPrefix(rest, "index/docs/") && (r.Method == http.MethodPut || r.Method == http.MethodGet):
		id := strings.TrimPrefix(rest, "index/docs/")
		c.MessageID = id
		if r.Method == http.MethodGet {
			c.Kind = KindIndexGet
			apply = func() (int, any) { return s.get(id) }
			break
		}
		var b docBody
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil || id == "" {
			http.Error(w, `{"error":"want a JSON body {\"version\":N,\"body\":\"...\"} and a document id"}`, http.StatusBadRequest)
			return
		}
		c.Kind, c.Version = KindIndexPut, b.Version
		external := r.URL.Query().Get("version_type") == "external"
		if external {
			v, err := strconv.Atoi(r.URL.Query().Get("version"))
			if err != nil || v <= 0 {
				http.Error(w, `{"error":"version_type=external needs version=N > 0"}`, http.StatusBadRequest)
				return
			}
			c.Kind, c.Version = KindIndexPutV, v
		}
		doc := co.Doc{ID: id, Version: c.Version, Body: b.Body}
		apply = func() (int, any) { return s.put(doc, external) }
	case rest == "notify" && r.Method == http.MethodPost:
		var n co.Notification
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil || n.MessageID == "" {
			http.Error(w, `{"error":"want a JSON body {\"messageId\":...,\"version\":N,\"text\":...}"}`, http.StatusBadRequest)
			return
		}
		c.Kind, c.MessageID, c.Version = KindNotify, n.MessageID, n.Version
		apply = func() (int, any) { return s.notify(n) }
	case rest == "notify/count" && r.Method == http.MethodGet:
		m := r.URL.Query().Get("messageId")
		v, _ := strconv.Atoi(r.URL.Query().Get("version"))
		c.Kind, c.MessageID, c.Version = KindNotifyRead, m, v
		apply = func() (int, any) { return s.count(m, v) }
	default:
		http.Error(w, `{"error":"no such endpoint"}`, http.StatusNotFound)
		return
	}
	c = s.record(c)
	switch s.runHook(c, BeforeApply) {
	case FailCall:
		s.finish(c.Seq, http.StatusServiceUnavailable, "failed by the kit (not applied)")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "unavailable (the kit failed this call; it did not take effect)"})
		return
	case DropAnswer:
		s.finish(c.Seq, 0, "dropped before it was applied")
		drop(w)
		return
	}
	status, answer := apply()
	outcome := outcomeOf(c.Kind, status, answer)
	if r.Context().Err() != nil {
		outcome += ", client gone before the answer"
	}
	if s.runHook(s.callAt(c.Seq, status, outcome), AfterApply) == DropAnswer {
		s.finish(c.Seq, 0, outcome+", answer lost")
		drop(w)
		return
	}
	s.finish(c.Seq, status, outcome)
	writeJSON(w, status, answer)
}

func outcomeOf(kind string, status int, answer any) string {
	switch {
	case status == http.StatusConflict:
		return "conflict (409)"
	case status == http.StatusNotFound:
		return "not found"
	case kind == KindIndexPut || kind == KindIndexPutV:
		if m, ok := answer.(map[string]any); ok && m["result"] == "noop" {
			return "noop (unchanged)"
		}
		return "applied"
	case kind == KindNotify:
		return "applied"
	}
	return "answered"
}

// drop closes the connection without an answer.
func drop(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // the server closes the connection without an answer
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) record(c Call) Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.Seq, c.At = len(s.calls)+1, time.Now()
	s.calls = append(s.calls, c)
	return c
}

func (s *Server) callAt(seq, status int, outcome string) Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls[seq-1]
	c.Status, c.Outcome = status, outcome
	return c
}

func (s *Server) finish(seq, status int, outcome string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[seq-1].Status, s.calls[seq-1].Outcome = status, outcome
}

func (s *Server) runHook(c Call, st Stage) Action {
	s.mu.Lock()
	h := s.hook
	s.mu.Unlock()
	if h == nil {
		return Proceed
	}
	a := h(c, st)
	if a == FailCall && st != BeforeApply {
		return Proceed
	}
	return a
}

func (s *Server) put(doc co.Doc, external bool) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.docs[doc.ID]
	if external && ok && cur.Version >= doc.Version {
		return http.StatusConflict, map[string]any{"error": "version_conflict", "current": cur.Version}
	}
	if ok && cur == doc {
		return http.StatusOK, map[string]any{"result": "noop", "version": doc.Version}
	}
	s.docs[doc.ID] = doc
	s.effects = append(s.effects, sinks.Effect{Scope: co.ScopeIndex, MessageID: doc.ID, Version: doc.Version, Body: doc.Body, At: time.Now()})
	result := "updated"
	if !ok {
		result = "created"
	}
	return http.StatusOK, map[string]any{"result": result, "version": doc.Version}
}

func (s *Server) get(id string) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.docs[id]
	if !ok {
		return http.StatusNotFound, map[string]any{"error": "not_found", "id": id}
	}
	return http.StatusOK, d
}

func (s *Server) notify(n co.Notification) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := n.MessageID + "@" + strconv.Itoa(n.Version)
	s.sent[k]++
	s.effects = append(s.effects, sinks.Effect{Scope: co.ScopeNotify, MessageID: n.MessageID, Version: n.Version, Body: n.Text, At: time.Now()})
	return http.StatusAccepted, map[string]any{"id": len(s.effects)}
}

func (s *Server) count(m string, v int) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return http.StatusOK, map[string]any{"count": s.sent[m+"@"+strconv.Itoa(v)]}
}
