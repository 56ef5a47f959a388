package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/onceproof/tck/internal/apidesc"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/api"
)

// orders is a small service taking the id from the body or the query (the
// reference takes it from a header, which carries no script twins), two
// instances over one map. same decides whether a stored key is the one
// asked for: bytes, or a careless shortcut.
type orders struct {
	in   string // apidesc.InBody or InQuery
	same func(stored, asked string) bool
	mu   sync.Mutex
	recs map[string][]byte // tenant \x00 key -> the creation's response
}

func (o *orders) find(tenant, key string) (string, []byte) {
	for k, v := range o.recs {
		t, stored, _ := strings.Cut(k, "\x00")
		if t == tenant && o.same(stored, key) {
			return k, v
		}
	}
	return "", nil
}

func (o *orders) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tenant := r.Header.Get("X-Tenant")
	problem := func(status int, title, key string) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"title": title, "status": status, "requestId": key, "tenant": tenant})
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case r.Method == http.MethodPost:
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			problem(400, "malformed body", "")
			return
		}
		key, _ := body["requestId"].(string)
		if o.in == apidesc.InQuery {
			key = r.URL.Query().Get("requestId")
		}
		if k, _ := o.find(tenant, key); k != "" {
			problem(409, "duplicate request id", key)
			return
		}
		body["id"], body["tenant"] = key, tenant
		res, _ := json.Marshal(body)
		o.recs[tenant+"\x00"+key] = res
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		_, _ = w.Write(res)
	case strings.HasPrefix(r.URL.Path, "/orders/"):
		if _, res := o.find(tenant, r.PathValue("id")); res != nil {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(res)
			return
		}
		problem(404, "no such order", r.PathValue("id"))
	default:
		items := []json.RawMessage{}
		if _, res := o.find(tenant, r.URL.Query().Get("requestId")); res != nil {
			items = append(items, res)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(items)
	}
}

// latin1 is a single-byte column: every character above U+00FF is "?".
func latin1(s string) string {
	return strings.Map(func(r rune) rune {
		if r > 0xff {
			return '?'
		}
		return r
	}, s)
}

// like is an unescaped SQL LIKE with the asked key as the pattern.
func like(stored, asked string) bool {
	var b strings.Builder
	for _, r := range asked {
		switch r {
		case '%':
			b.WriteString(".*")
		case '_':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	return regexp.MustCompile("^(?s:" + b.String() + ")$").MatchString(stored)
}

// API-1.6 with the id in a body or a query: a service comparing bytes
// passes, over two instances; one whose column is Latin-1 fails on a
// script twin, one that looks keys up with an unescaped LIKE on a twin
// holding "%" or "_", each named in the first line with its replica.
func TestTwinsInBodyAndQuery(t *testing.T) {
	cases := []struct {
		name string
		same func(stored, asked string) bool
		want verdict.Verdict
		line string
	}{
		{"bytes", func(a, b string) bool { return a == b }, verdict.Pass, ""},
		{"latin-1", func(a, b string) bool { return latin1(a) == latin1(b) }, verdict.Fail, "script twin"},
		// "%" is in URL twins too ("a%2Fb"/"a%252Fb"): either may show it;
		// so may any twin whose random id drew a "_" (base64url has it),
		// which LIKE matches against any one character.
		{"like", like, verdict.Fail, `(metacharacter|URL) twin|twin "[^"]*[_%][^"]*"`},
	}
	for _, in := range []string{apidesc.InBody, apidesc.InQuery} {
		for _, c := range cases {
			t.Run(in+"/"+c.name, func(t *testing.T) {
				o := &orders{in: in, same: c.same, recs: map[string][]byte{}}
				mux := http.NewServeMux()
				mux.Handle("POST /orders", o)
				mux.Handle("GET /orders/{id}", o)
				mux.Handle("GET /orders", o)
				a, b := httptest.NewServer(mux), httptest.NewServer(mux)
				defer a.Close()
				defer b.Close()
				d := apidesc.Default(apidesc.Reject409)
				d.Create.ID = apidesc.Place{In: in, Name: "requestId"}
				var got verdict.Result
				for _, r := range runner.Run(c.name, func() {
					api.Register(api.Target{URL: a.URL, Replicas: []string{b.URL}, Desc: d})
				}, runner.Options{Rules: []string{"API-1.6"}}) {
					if r.Rule == "API-1.6" {
						got = r
					}
				}
				t.Logf("%s: %s", got.Verdict, got.Reason)
				if got.Verdict != c.want {
					t.Fatalf("%s, want %s: %s", got.Verdict, c.want, got.Reason)
				}
				line, _, _ := strings.Cut(got.Reason, "\n")
				if c.line != "" && (!regexp.MustCompile(c.line).MatchString(line) || !strings.Contains(line, "replica-") || len([]rune(line)) >= 200) {
					t.Errorf("the first line should name the %s and the replica in under 200 characters: %s", c.line, line)
				}
			})
		}
	}
}
