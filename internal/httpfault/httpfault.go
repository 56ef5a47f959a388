// Package httpfault is a loopback HTTP proxy between the kit's client and a
// service under test that can lose a response: the request is forwarded and
// answered by the service in full, then the client's connection is closed
// without a byte of the answer. To the client this is a timeout or a reset
// (the seed's "回包丢失"); to the service the request succeeded. The proxy
// keeps what it dropped so a rule can compare a later replay with it.
//
// It can also hold a request (HoldNext): it tells the rule the moment the
// request is forwarded, and sends nothing back until the rule releases it,
// so the rule can kill the service while the request is being handled and
// know whether the service had answered by then.
package httpfault

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Dropped is an exchange whose response the proxy withheld.
type Dropped struct {
	Method, Path string
	Status       int
	Header       http.Header
	Body         []byte
	At           time.Time
	// Err is set when the service broke off without an answer (it was
	// killed while handling the request); Status and Body are then empty.
	Err error
}

// Match selects the request whose response is to be lost.
type Match func(r *http.Request, body []byte) bool

type arm struct {
	match Match
	got   chan Dropped
	// A held request: forwarded is closed when it is sent to the
	// service, release by the rule when the proxy may drop the answer.
	forwarded, release chan struct{}
}

// Proxy forwards every request to one upstream.
type Proxy struct {
	upstream *url.URL
	client   *http.Client
	// upstreamTLS verifies an https:// upstream (nil: the system's roots).
	upstreamTLS *tls.Config
	srv         *http.Server
	addr        string
	done        chan struct{}

	mu   sync.Mutex
	arms []*arm
}

// Start listens on a free loopback port and forwards to upstream (a base
// URL such as http://127.0.0.1:8080).
func Start(upstream string) (*Proxy, error) { return StartTLS(upstream, nil) }

// StartTLS is Start toward an https:// upstream verified with upstreamTLS
// (nil: the system's roots); the proxy itself listens in plain HTTP on
// loopback, where only the kit's own client reaches it.
func StartTLS(upstream string, upstreamTLS *tls.Config) (*Proxy, error) {
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("httpfault: upstream %q is not a URL", upstream)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("httpfault: %w", err)
	}
	p := &Proxy{
		upstream: u, addr: ln.Addr().String(), done: make(chan struct{}), upstreamTLS: upstreamTLS,
		client: &http.Client{
			Transport:     &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second, TLSClientConfig: upstreamTLS.Clone()},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { defer close(p.done); _ = p.srv.Serve(ln) }()
	return p, nil
}

// URL is the proxy's base URL.
func (p *Proxy) URL() string { return "http://" + p.addr }

// LoseNext arms the proxy: the next request that match selects is
// forwarded, its response read in full and then withheld, and the exchange
// is sent on the returned channel (buffered, one value).
func (p *Proxy) LoseNext(match Match) <-chan Dropped {
	a := &arm{match: match, got: make(chan Dropped, 1)}
	p.mu.Lock()
	p.arms = append(p.arms, a)
	p.mu.Unlock()
	return a.got
}

// Hold is a held request (HoldNext).
type Hold struct {
	a *arm
}

// Forwarded is closed once the request has been sent to the service.
func (h *Hold) Forwarded() <-chan struct{} { return h.a.forwarded }

// Release lets the proxy drop the answer (or the broken exchange) and
// returns what the service answered, if anything.
func (h *Hold) Release() Dropped {
	close(h.a.release)
	return <-h.a.got
}

// HoldNext arms the proxy to hold the next request that match selects: it
// is forwarded (Forwarded closes), and whatever the service does, nothing
// reaches the client until Release, after which the client's connection is
// closed without an answer.
func (p *Proxy) HoldNext(match Match) *Hold {
	a := &arm{match: match, got: make(chan Dropped, 1), forwarded: make(chan struct{}), release: make(chan struct{})}
	p.mu.Lock()
	p.arms = append(p.arms, a)
	p.mu.Unlock()
	return &Hold{a: a}
}

// take returns and disarms the first arm matching the request.
func (p *Proxy) take(r *http.Request, body []byte) *arm {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, a := range p.arms {
		if a.match(r, body) {
			p.arms = append(p.arms[:i], p.arms[i+1:]...)
			return a
		}
	}
	return nil
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "httpfault: reading the request: "+err.Error(), http.StatusBadGateway)
		return
	}
	lose := p.take(r, body)
	u := *p.upstream
	u.Path = r.URL.Path
	u.RawPath = r.URL.RawPath
	u.RawQuery = r.URL.RawQuery
	// Not the client's context: a lost response must still be the service's
	// complete answer, whatever the client does meanwhile.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// An opaque body: net/http must never resend a request (it would for
	// a POST carrying an Idempotency-Key on a broken kept-alive connection).
	out, err := http.NewRequestWithContext(ctx, r.Method, u.String(), struct{ io.Reader }{bytes.NewReader(body)})
	if err != nil {
		http.Error(w, "httpfault: "+err.Error(), http.StatusBadGateway)
		return
	}
	out.ContentLength = int64(len(body))
	if len(body) == 0 {
		out.Body = http.NoBody
	}
	out.Header = r.Header.Clone()
	if lose != nil && lose.forwarded != nil {
		p.held(w, r, lose, out)
		return
	}
	res, err := p.client.Do(out)
	if err != nil {
		// The client must not mistake the kit's proxy for the service.
		w.Header().Set("X-Httpfault", "upstream unreachable")
		http.Error(w, "httpfault: upstream: "+err.Error(), http.StatusBadGateway)
		return
	}
	rb, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		w.Header().Set("X-Httpfault", "upstream broke off")
		http.Error(w, "httpfault: upstream body: "+err.Error(), http.StatusBadGateway)
		return
	}
	if lose != nil {
		lose.got <- Dropped{Method: r.Method, Path: r.URL.RequestURI(), Status: res.StatusCode, Header: res.Header.Clone(), Body: rb, At: time.Now()}
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				_ = c.Close()
				return
			}
		}
		panic(http.ErrAbortHandler) // closes the connection without a response
	}
	for k, vs := range res.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(res.StatusCode)
	_, _ = w.Write(rb)
}

// held forwards a held request, waits for the rule's release and drops
// the answer.
func (p *Proxy) held(w http.ResponseWriter, r *http.Request, a *arm, out *http.Request) {
	close(a.forwarded)
	d := Dropped{Method: r.Method, Path: r.URL.RequestURI()}
	// A connection of its own: the service is about to be killed.
	one := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: p.upstreamTLS.Clone()}, CheckRedirect: p.client.CheckRedirect}
	res, err := one.Do(out)
	if err == nil {
		d.Body, err = io.ReadAll(res.Body)
		res.Body.Close()
		d.Status, d.Header = res.StatusCode, res.Header.Clone()
	}
	d.At, d.Err = time.Now(), err
	if err != nil {
		d.Status, d.Body = 0, nil
	}
	<-a.release
	a.got <- d
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			_ = c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// Close stops the proxy and closes its connections.
func (p *Proxy) Close() error {
	err := p.srv.Close()
	<-p.done
	p.client.CloseIdleConnections()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
