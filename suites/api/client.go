package api

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/onceproof/tck/internal/apidesc"
	"github.com/onceproof/tck/internal/history"
)

// answer is one HTTP exchange as the kit saw it.
type answer struct {
	Status int
	Header http.Header
	Body   []byte
	Err    error // transport: no answer (timeout, reset, refused)
	start  time.Duration
	end    time.Duration
}

func (a answer) String() string {
	if a.Err != nil {
		return "no answer: " + a.Err.Error()
	}
	return fmt.Sprintf("%d %s", a.Status, clip(string(a.Body), 160))
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// client speaks a description's endpoints and records every exchange.
type client struct {
	d    *apidesc.Description
	hc   *http.Client
	rec  *history.Recorder
	base string
	// actor names the client in the history: "kit", or "replica-N" when
	// a rule spreads its steps over the instances (spread).
	actor string
	tls   *tls.Config // the target's trust material (Target.TLS), kept for with
}

// newClient makes a client of base. Request bodies are never replayable by
// net/http (it would otherwise resend a POST carrying an Idempotency-Key on
// a broken keep-alive connection, hiding what the rule looks at).
func newClient(d *apidesc.Description, base string, conns int, keepAlive bool, tlsCfg *tls.Config) *client {
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: 0, IdleConnTimeout: 30 * time.Second, DisableKeepAlives: !keepAlive}
	if tlsCfg != nil {
		tr.TLSClientConfig = tlsCfg.Clone()
	}
	return &client{d: d, base: strings.TrimRight(base, "/"), rec: history.New(), actor: "kit", tls: tlsCfg,
		hc: &http.Client{Transport: tr, Timeout: 20 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (c *client) close() { c.hc.CloseIdleConnections() }

// with shares the recorder of c with a client of another base (the fault proxy).
func (c *client) with(base string, keepAlive bool) *client {
	n := newClient(c.d, base, 4, keepAlive, c.tls)
	n.rec = c.rec
	return n
}

// spread is a client of every instance the kit started (t.URL, then
// t.Replicas), sharing c's recorder, each named replica-N in the history;
// with one instance it is c alone, and nothing changes.
func spread(c *client, t Target) []*client {
	urls := append([]string{t.URL}, t.Replicas...)
	if len(urls) == 1 {
		return []*client{c}
	}
	cs := make([]*client, len(urls))
	for i, u := range urls {
		cs[i] = c.with(u, true)
		cs[i].actor = fmt.Sprintf("replica-%d", i+1)
	}
	return cs
}

// where is " on replica-N" for a client of several instances' (spread),
// "" for the one instance: what a failure's first line says of it.
func (c *client) where() string {
	if c.actor == "kit" {
		return ""
	}
	return " on " + c.actor
}

// fill substitutes {id} and {scope} in a path, escaped for where they
// stand: a path segment, or a query value (where "+" and "&" must be
// escaped too).
func fill(tmpl, id, scope string) string {
	path, query, hasQuery := strings.Cut(tmpl, "?")
	path = strings.ReplaceAll(path, "{id}", url.PathEscape(id))
	path = strings.ReplaceAll(path, "{scope}", url.PathEscape(scope))
	if !hasQuery {
		return path
	}
	query = strings.ReplaceAll(query, "{id}", url.QueryEscape(id))
	return path + "?" + strings.ReplaceAll(query, "{scope}", url.QueryEscape(scope))
}

// names are the header names a request carries its id and scope under;
// "" is the description's own. API-1.2 repeats a request under the same
// names in other casings.
type names struct{ id, scope string }

func orDeclared(name, declared string) string {
	if name == "" {
		return declared
	}
	return name
}

// setField sets a header field under name exactly as given: Header.Set
// would canonicalize it ("idempotency-key" goes out as "Idempotency-Key"),
// and the casing is what API-1.2's repeats vary. net/http writes a map
// key as it is.
func setField(h http.Header, name, value string) {
	h.Del(name)
	h[name] = []string{value}
}

// withScope places the scope of a request as the description says, its
// header under the declared name (or n.scope).
func (c *client) withScope(req *http.Request, scope string, n names) {
	p := c.d.Scope
	if p == nil || scope == "" {
		return
	}
	switch p.In {
	case apidesc.InHeader:
		setField(req.Header, orDeclared(n.scope, p.Name), scope)
	case apidesc.InQuery:
		q := req.URL.Query()
		q.Set(p.Name, scope)
		req.URL.RawQuery = q.Encode()
	}
}

// opaque hides the body's type from net/http so the request is not
// replayable (see newClient).
type opaque struct{ io.Reader }

func (c *client) do(ctx context.Context, actor, action, id string, req *http.Request) answer {
	h := c.rec.Invoke(actor, action, id)
	res, err := c.hc.Do(req.WithContext(ctx))
	if err != nil {
		err = hintReset(err)
		h.Info("no answer: " + err.Error())
		return answer{Err: err}
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	a := answer{Status: res.StatusCode, Header: res.Header, Body: body}
	if err != nil {
		h.Info(fmt.Sprintf("%d, body broke off: %v", res.StatusCode, err))
		return answer{Err: err}
	}
	outcome := history.OK
	if res.StatusCode >= 400 {
		outcome = history.Fail
	}
	h.Complete(outcome, a.String())
	return a
}

// hintReset names the likely cause of a reset before any answer: the kit
// runs rules at once, and a listen backlog smaller than its burst (5 in
// Python's socketserver) resets the connections past it.
func hintReset(err error) error {
	if errors.Is(err, syscall.ECONNRESET) {
		return fmt.Errorf("%w (reset before any answer: a listen backlog smaller than the kit's concurrent connections does this)", err)
	}
	return err
}

// create sends the create request with id, scope and body.
func (c *client) create(ctx context.Context, actor, id, scope string, body []byte) answer {
	return c.createAs(ctx, actor, id, scope, body, names{})
}

// createAs is create with the id and scope headers under names n (the
// history's action names a casing that is not the declared one).
func (c *client) createAs(ctx context.Context, actor, id, scope string, body []byte, n names) answer {
	d := c.d
	path := fill(d.Create.Path, id, scope)
	req, err := http.NewRequest(d.Create.Method, c.base+path, opaque{bytes.NewReader(body)})
	if err != nil {
		return answer{Err: err}
	}
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, application/problem+json")
	switch d.ID().In {
	case apidesc.InHeader:
		setField(req.Header, orDeclared(n.id, d.ID().Name), id)
	case apidesc.InQuery:
		q := req.URL.Query()
		q.Set(d.ID().Name, id)
		req.URL.RawQuery = q.Encode()
	}
	c.withScope(req, scope, n)
	action := d.Create.Method + " " + d.Create.Path
	for _, name := range []string{n.id, n.scope} {
		if name != "" {
			action += fmt.Sprintf(" (header %q)", name)
		}
	}
	return c.do(ctx, actor, action, id, req)
}

func (c *client) get(ctx context.Context, actor, tmpl, id, scope string) answer {
	req, err := http.NewRequest(http.MethodGet, c.base+fill(tmpl, id, scope), nil)
	if err != nil {
		return answer{Err: err}
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	c.withScope(req, scope, names{})
	return c.do(ctx, actor, "GET "+tmpl, id, req)
}

// read is the authoritative query by the stable id.
func (c *client) read(ctx context.Context, id, scope string) answer {
	return c.get(ctx, c.actor, c.d.Read.Path, id, scope)
}

// count is how many resources carry id: from the list when declared, else
// 1 or 0 from the read. listed says which.
func (c *client) count(ctx context.Context, id, scope string) (n int, listed bool, a answer, err error) {
	if c.d.List == nil {
		a = c.read(ctx, id, scope)
		if a.Err != nil {
			return 0, false, a, a.Err
		}
		if slices.Contains(c.d.Read.Found, a.Status) {
			return 1, false, a, nil
		}
		return 0, false, a, nil
	}
	a = c.get(ctx, c.actor, c.d.List.Path, id, scope)
	if a.Err != nil {
		return 0, true, a, a.Err
	}
	items, err := listItems(c.d, a)
	return len(items), true, a, err
}

// listItems decodes a list answer.
func listItems(d *apidesc.Description, a answer) ([]json.RawMessage, error) {
	if a.Status != http.StatusOK {
		return nil, fmt.Errorf("list.path %s answered %s, want 200 and a JSON array", d.List.Path, a)
	}
	var items []json.RawMessage
	if d.List.Items == "" {
		if err := json.Unmarshal(a.Body, &items); err != nil {
			return nil, fmt.Errorf("list.path %s: the body is not a JSON array: %v", d.List.Path, err)
		}
		return items, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(a.Body, &obj); err != nil {
		return nil, fmt.Errorf("list.path %s: the body is not a JSON object: %v", d.List.Path, err)
	}
	if err := json.Unmarshal(obj[d.List.Items], &items); err != nil {
		return nil, fmt.Errorf("list.items %q: not a JSON array in the list body: %v", d.List.Items, err)
	}
	return items, nil
}

// object decodes a JSON object body (nil if it is not one).
func object(b []byte) map[string]any {
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

// shows reports which fields of the payload the read body lacks or holds
// with another value ("" when it shows all of them).
func shows(read []byte, payload []byte) string {
	got, want := object(read), object(payload)
	if got == nil {
		return "the read body is not a JSON object"
	}
	var diffs []string
	for k, v := range want {
		if !reflect.DeepEqual(got[k], v) {
			diffs = append(diffs, fmt.Sprintf("%s: sent %v, read %v", k, v, got[k]))
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "; ")
}

// sameJSON compares two bodies as JSON values (bytes when not JSON).
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

func statusList(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, " or ")
}
