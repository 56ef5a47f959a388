package httpfault

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A matching request reaches the service and its whole answer is withheld
// (the client's connection closes) and kept; other requests pass through.
func TestLosesOneResponse(t *testing.T) {
	var calls atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(append([]byte(`{"echo":`), append(b, '}')...))
	}))
	defer up.Close()
	p, err := Start(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	lost := p.LoseNext(func(r *http.Request, body []byte) bool { return bytes.Contains(body, []byte("lose-me")) })
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	defer c.CloseIdleConnections()

	res, err := c.Post(p.URL()+"/orders", "application/json", strings.NewReader(`"keep"`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated || string(b) != `{"echo":"keep"}` {
		t.Errorf("pass-through: %d %s", res.StatusCode, b)
	}

	if res, err := c.Post(p.URL()+"/orders?x=1", "application/json", strings.NewReader(`"lose-me"`)); err == nil {
		res.Body.Close()
		t.Fatalf("the lost response arrived: %d", res.StatusCode)
	}
	select {
	case d := <-lost:
		if d.Status != http.StatusCreated || string(d.Body) != `{"echo":"lose-me"}` || d.Path != "/orders?x=1" || d.Method != http.MethodPost {
			t.Errorf("dropped: %+v", d)
		}
	default:
		t.Fatal("nothing was recorded as dropped")
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the service saw %d requests, want 2", n)
	}

	// Disarmed after one: the same request now gets its answer.
	res, err = c.Post(p.URL()+"/orders", "application/json", strings.NewReader(`"lose-me"`))
	if err != nil {
		t.Fatalf("after the one loss: %v", err)
	}
	res.Body.Close()
}

// An upstream that does not answer is a 502 marked as the proxy's, never
// mistaken for the service's answer.
func TestUpstreamDownIsMarked(t *testing.T) {
	up := httptest.NewServer(http.NotFoundHandler())
	url := up.URL
	up.Close()
	p, err := Start(url)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, err := http.Get(p.URL() + "/x")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadGateway || res.Header.Get("X-Httpfault") == "" {
		t.Errorf("got %d %v", res.StatusCode, res.Header)
	}
}

// A held request: Forwarded closes once the service has it; the client
// gets nothing until Release, then no answer; Dropped says whether the
// service had answered (here it dies mid-request: it had not).
func TestHoldsARequestThroughAKill(t *testing.T) {
	kill := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-kill
		c, _, err := w.(http.Hijacker).Hijack() // the process dies: the connection closes unanswered
		if err == nil {
			_ = c.Close()
		}
	}))
	defer up.Close()
	p, err := Start(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	h := p.HoldNext(func(*http.Request, []byte) bool { return true })
	got := make(chan error, 1)
	go func() {
		res, err := http.Post(p.URL()+"/x", "application/json", strings.NewReader(`{}`))
		if err == nil {
			res.Body.Close()
		}
		got <- err
	}()
	<-h.Forwarded()
	close(kill)
	select {
	case err := <-got:
		t.Fatalf("the client got an answer before the release: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	d := h.Release()
	if d.Err == nil || d.Status != 0 {
		t.Errorf("the service died before it answered, the proxy says %d %v", d.Status, d.Err)
	}
	if err := <-got; err == nil {
		t.Error("the client got an answer to a held request")
	}
}
