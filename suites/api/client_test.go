package api

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/onceproof/tck/internal/apidesc"
	"github.com/onceproof/tck/internal/httpfault"
)

// net/http resends a request carrying an Idempotency-Key on a reused
// connection that broke before the answer; the kit's create must go out
// once, or a lost response would be silently retried behind the rule's back.
func TestCreateIsNeverResent(t *testing.T) {
	var seen atomic.Int32
	up := http.NewServeMux()
	up.HandleFunc("POST /orders", func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		w.WriteHeader(http.StatusCreated)
	})
	srv := &http.Server{Handler: up}
	ln := listen(t)
	go srv.Serve(ln)
	defer srv.Close()
	p, err := httpfault.Start("http://" + ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	d := apidesc.Default(apidesc.Reject409)
	c := newClient(d, p.URL(), 2, true, nil) // keep-alive: the second create reuses the connection
	defer c.close()
	in := newValues(d, 1, "API-3.1").newIntent("API-3.1")
	if a := c.create(context.Background(), "kit", in.id+"-warm", in.scope, d.BodyJSON(in.id+"-warm", 1)); a.Err != nil {
		t.Fatal(a.Err)
	}
	p.LoseNext(func(_ *http.Request, body []byte) bool { return bytes.Equal(body, in.body) })
	if a := c.create(context.Background(), "kit", in.id, in.scope, in.body); a.Err == nil {
		t.Fatalf("the lost response arrived: %s", a)
	}
	if n := seen.Load(); n != 2 {
		t.Errorf("the service saw %d creates, want 2 (the warm-up and the lost one, never resent)", n)
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// A connection reset before any answer names the listen backlog, the
// likely cause when the kit's rules run at once against a small one.
func TestResetNamesTheBacklog(t *testing.T) {
	ln := listen(t)
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			// The whole request read (else the client's write of its
			// body may be what fails), then a close that resets.
			if req, err := http.ReadRequest(bufio.NewReader(conn)); err == nil {
				_, _ = io.Copy(io.Discard, req.Body)
			}
			conn.(*net.TCPConn).SetLinger(0)
			conn.Close()
		}
	}()
	d := apidesc.Default(apidesc.Reject409)
	c := newClient(d, "http://"+ln.Addr().String(), 1, false, nil)
	defer c.close()
	in := newValues(d, 1, "API-1.1").newIntent("API-1.1")
	a := c.create(context.Background(), "kit", in.id, in.scope, in.body)
	if a.Err == nil || !strings.Contains(a.Err.Error(), "listen backlog") {
		t.Fatalf("got %v, want a reset that names the listen backlog", a.Err)
	}
}
