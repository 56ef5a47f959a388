package api

import (
	"bufio"
	"context"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/apidesc"
)

// The casing of a header name must reach the wire as the kit gives it:
// Header.Set would canonicalize it, and API-1.2's repeats vary it. A raw
// listener reads the request's head as bytes.
func TestHeaderNamesGoOutAsGiven(t *testing.T) {
	ln := listen(t)
	defer ln.Close()
	heads := make(chan []string, 2)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			tp := textproto.NewReader(bufio.NewReader(conn))
			var head []string
			for {
				l, err := tp.ReadLine()
				if err != nil || l == "" {
					break
				}
				head = append(head, l)
			}
			heads <- head
			_, _ = conn.Write([]byte("HTTP/1.1 201 Created\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
			conn.Close()
		}
	}()
	d := apidesc.Default(apidesc.Reject409)
	d.Create.ID.Name = "idempotency-KEY" // a declared name that is not canonical goes out as declared too
	c := newClient(d, "http://"+ln.Addr().String(), 1, false, nil)
	defer c.close()
	in := newValues(d, 1, "API-1.2").newIntent("API-1.2")
	for _, tc := range []struct {
		n    names
		want []string
	}{
		{names{}, []string{"idempotency-KEY: " + in.id, "X-Tenant: " + in.scope}},
		{names{id: "IDEMPOTENCY-KEY", scope: "x-tENANT"}, []string{"IDEMPOTENCY-KEY: " + in.id, "x-tENANT: " + in.scope}},
	} {
		if a := c.createAs(context.Background(), "kit", in.id, in.scope, in.body, tc.n); a.Err != nil || a.Status != http.StatusCreated {
			t.Fatalf("%+v: %s", tc.n, a)
		}
		head := <-heads
		for _, w := range tc.want {
			if !slices.Contains(head, w) {
				t.Errorf("%+v: the head lacks %q:\n%s", tc.n, w, strings.Join(head, "\n"))
			}
		}
	}
}

func TestCasings(t *testing.T) {
	v := newValues(apidesc.Default(apidesc.Reject409), 7, "API-1.2")
	got := v.casings("Idempotency-Key")
	want := []string{"idempotency-key", "IDEMPOTENCY-KEY", "iDEMPOTENCY-kEY"}
	if len(got) != 4 || !slices.Equal(got[:3], want) {
		t.Fatalf("casings: %q, want %q and a drawn mix", got, want)
	}
	if !strings.EqualFold(got[3], "Idempotency-Key") || slices.Contains(append(want, "Idempotency-Key"), got[3]) {
		t.Errorf("the drawn mix %q is not another spelling of the name", got[3])
	}
	if again := newValues(apidesc.Default(apidesc.Reject409), 7, "API-1.2").casings("Idempotency-Key"); !slices.Equal(again, got) {
		t.Errorf("the seed did not replay the casings: %q, then %q", got, again)
	}
	// A declared name that is not canonical: the canonical form is one more.
	if got := v.casings("x-tenant"); !slices.Contains(got, "X-Tenant") || slices.Contains(got, "x-tenant") {
		t.Errorf("casings of x-tenant: %q", got)
	}
}
