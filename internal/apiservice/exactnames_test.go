package apiservice

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/onceproof/tck/internal/apidesc"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/api"
)

// oneByte is a connection whose reads return one byte each: a head line
// arrives in parts.
type oneByte struct {
	net.Conn
	r io.Reader
}

func (c oneByte) Read(p []byte) (int, error) { return c.r.Read(p) }

// The filter drops a declared name in another casing, keeps the exact one
// and every other line, and passes a body through untouched, however the
// bytes arrive, request after request on one connection.
func TestExactNamesFilter(t *testing.T) {
	body := "Idempotency-Key: in the body\n"
	req := func(key string) string {
		return fmt.Sprintf("POST /orders HTTP/1.1\r\nHost: x\r\n%s: k\r\nX-Tenant: t\r\nContent-Length: %d\r\n\r\n%s", key, len(body), body)
	}
	in := "\r\n" + req("idempotency-key") + req("Idempotency-Key") + req("IDEMPOTENCY-KEY")
	c := &exactConn{Conn: oneByte{r: iotest.OneByteReader(strings.NewReader(in))}, names: exactHeaders}
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	want := "\r\n" + strings.Replace(req("x"), "x: k\r\n", "", 1) + req("Idempotency-Key") + strings.Replace(req("x"), "x: k\r\n", "", 1)
	if string(got) != want {
		t.Errorf("filtered:\n%q\nwant:\n%q", got, want)
	}
}

// The mutant answers a repeat whose key header is spelled in another
// casing as a request without a key, and one whose tenant header is as a
// request without a tenant (a new creation); the reference answers both
// as the repeats they are.
func TestCaseSensitiveHeader(t *testing.T) {
	for _, tc := range []struct {
		d    Defect
		want []int
	}{
		{"", []int{201, 409, 409, 409}},
		{CaseSensitiveHeader, []int{201, 400, 201, 409}},
	} {
		s, err := Start(context.Background(), apidesc.Reject409, tc.d)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL(), "http://"))
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(conn)
		body := `{"item":"book","qty":1}`
		var got []int
		// One connection, kept alive: the filter follows the requests.
		for _, h := range []string{"Idempotency-Key: k-1\r\nX-Tenant: t-1", "idempotency-key: k-1\r\nX-Tenant: t-1", "Idempotency-Key: k-1\r\nx-tenant: t-1", "Idempotency-Key: k-1\r\nX-Tenant: t-1"} {
			fmt.Fprintf(conn, "POST /orders HTTP/1.1\r\nHost: x\r\n%s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", h, len(body), body)
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("defect %q: %v", tc.d, err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			got = append(got, res.StatusCode)
		}
		conn.Close()
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("defect %q: answers %v, want %v", tc.d, got, tc.want)
		}
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	}
}

// API-1.2 catches a service that matches the scope's header name exactly
// and the key's in any casing: its repeat under "x-tenant" is a creation
// under no tenant, and the first line says which header was sent.
func TestAPI12CatchesScopeCasing(t *testing.T) {
	defer func(names []string) { exactHeaders = names }(exactHeaders)
	exactHeaders = []string{"X-Tenant"}
	s, err := Start(context.Background(), apidesc.Reject409, CaseSensitiveHeader)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Stop() }()
	var got verdict.Result
	for _, res := range runner.Run("api/scope-casing", func() {
		api.Register(api.Target{URL: s.URL(), Desc: apidesc.Default(apidesc.Reject409), Seed: 37})
	}, runner.Options{Rules: []string{"API-1.2"}}) {
		if res.Rule == "API-1.2" {
			got = res
		}
	}
	t.Logf("API-1.2: %s: %s", got.Verdict, got.Reason)
	want := `repeat with header "x-tenant" (the scope): must be a repeat (409), got 201`
	if got.Verdict != verdict.Fail || !strings.HasPrefix(got.Reason, want) {
		t.Errorf("API-1.2: %s: %s\nwant a fail starting %q", got.Verdict, got.Reason, want)
	}
}
