package main

import (
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onceproof/tck/adapters/api/reference"
	"github.com/onceproof/tck/internal/apidesc"
	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/tlsmat/tlstest"
)

// httpsFront is the reference api service (reject-409) behind a TLS front
// with p's server certificate; it returns the front's https URL.
func httpsFront(t *testing.T, p *tlstest.PKI) string {
	t.Helper()
	srv, err := reference.Start(t.Context(), apidesc.Reject409)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	back, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewUnstartedServer(httputil.NewSingleHostReverseProxy(back))
	front.TLS = p.ServerConfig(t, false)
	front.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the test's own
	front.StartTLS()
	t.Cleanup(front.Close)
	return front.URL
}

// runFiles runs API-1.1 against the https front with args, and returns
// the exit and every output (stdout, stderr, the report folder's files);
// an output holding the key is an error.
func runFiles(t *testing.T, front, key string, args ...string) (int, string) {
	t.Helper()
	code, stderr, all := tckAll(t, append([]string{"run", "--suite", "api", "--target", "api/http=" + front, "--rule", "API-1.1"}, args...)...)
	if code != reports.ExitConformant {
		t.Logf("exit %d: %s", code, strings.TrimSpace(stderr))
		requireOneLine(t, "tls from a file", stderr)
	}
	if strings.Contains(all, key) || strings.Contains(all, "PRIVATE KEY") {
		t.Errorf("%v: the key appears in an output", args)
	}
	return code, all
}

// writeTLSFile writes body to dir/name and returns the path.
func writeTLSFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	f := filepath.Join(dir, name)
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// Issue 40: a profile's tls section names the CA (a path relative to the
// profile, which the run does not start in) and is used when no --tls-*
// flag is given; the flags win; a wrong path is exit 3, one line naming the
// profile and the field; a file that is no key is exit 3 without a byte
// of the key.
func TestTLSMaterialInAProfile(t *testing.T) {
	dir := t.TempDir()
	p := tlstest.New(t, dir, "a")
	other := tlstest.New(t, dir, "b")
	key := string(tlstest.KeyBytes(t, p.ClientKey))
	front := httpsFront(t, p)
	prof := func(name, tls string) string {
		return writeTLSFile(t, dir, name, "schema: onceproof.profile/v1\nname: tls-from-a-profile\nhttp:\n  repeatedId: conflict\ntls:\n"+tls)
	}
	good := prof("good.yaml", "  ca: "+filepath.Base(p.CA)+"\n  cert: "+filepath.Base(p.ClientCert)+"\n  key: "+filepath.Base(p.ClientKey)+"\n")
	if code, all := runFiles(t, front, key, "--profile", good); code != reports.ExitConformant || !strings.Contains(all, "1 pass") {
		t.Fatalf("the profile's CA: exit %d, want 0 and API-1.1 passed:\n%s", code, all)
	}
	// The flags win over the profile, both ways.
	wrongCA := prof("other.yaml", "  ca: "+filepath.Base(other.CA)+"\n")
	if code, all := runFiles(t, front, key, "--profile", wrongCA, "--tls-ca", p.CA); code != reports.ExitConformant {
		t.Errorf("--tls-ca over a profile naming another CA: exit %d, want 0:\n%s", code, all)
	}
	if code, all := runFiles(t, front, key, "--profile", good, "--tls-ca", other.CA); code != reports.ExitUnavailable || !strings.Contains(all, "unknown authority") {
		t.Errorf("--tls-ca of another CA over a good profile: exit %d, want 4:\n%s", code, all)
	}
	if code, all := runFiles(t, front, key, "--profile", wrongCA); code != reports.ExitUnavailable || !strings.Contains(all, "unknown authority") {
		t.Errorf("a profile naming another CA: exit %d, want 4:\n%s", code, all)
	}
	missing := prof("missing.yaml", "  ca: no-such-ca.pem\n")
	code, all := runFiles(t, front, key, "--profile", missing)
	if code != reports.ExitUsage || !strings.Contains(all, missing+": tls.ca "+filepath.Join(dir, "no-such-ca.pem")+": no such file") {
		t.Errorf("a profile naming a missing CA: exit %d, want 3 naming the profile, the field and the path:\n%s", code, all)
	}
	notKey := prof("notkey.yaml", "  cert: "+filepath.Base(p.ClientCert)+"\n  key: "+filepath.Base(other.ClientKey)+"\n")
	if code, all := runFiles(t, front, key, "--profile", notKey); code != reports.ExitUsage || !strings.Contains(all, "tls.key") ||
		strings.Contains(all, string(tlstest.KeyBytes(t, other.ClientKey))) {
		t.Errorf("a profile naming another certificate's key: exit %d, want 3 naming tls.key, no key:\n%s", code, all)
	}
	unknown := prof("unknown.yaml", "  cafile: x.pem\n")
	if code, all := runFiles(t, front, key, "--profile", unknown); code != reports.ExitUsage || !strings.Contains(all, "cafile") {
		t.Errorf("a profile with an unknown tls field: exit %d, want 3 naming it:\n%s", code, all)
	}
}

// Issue 40: an api description's tls section names the CA, relative to
// the description, used without --tls-* flags (which win); a wrong path
// is exit 3, one line naming the description and the field.
func TestTLSMaterialInAnAPIDescription(t *testing.T) {
	dir := t.TempDir()
	p := tlstest.New(t, dir, "a")
	other := tlstest.New(t, dir, "b")
	key := string(tlstest.KeyBytes(t, p.ClientKey))
	front := httpsFront(t, p)
	desc := func(name string, tls map[string]string) string {
		b, err := json.Marshal(apidesc.Default(apidesc.Reject409))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		m["tls"] = tls
		b, err = json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return writeTLSFile(t, dir, name, string(b))
	}
	good := desc("good.json", map[string]string{"ca": filepath.Base(p.CA)})
	if code, all := runFiles(t, front, key, "--api-desc", good); code != reports.ExitConformant || !strings.Contains(all, "1 pass") {
		t.Fatalf("the description's CA: exit %d, want 0 and API-1.1 passed:\n%s", code, all)
	}
	wrongCA := desc("other.json", map[string]string{"ca": filepath.Base(other.CA)})
	if code, all := runFiles(t, front, key, "--api-desc", wrongCA); code != reports.ExitUnavailable || !strings.Contains(all, "unknown authority") {
		t.Errorf("a description naming another CA: exit %d, want 4:\n%s", code, all)
	}
	if code, all := runFiles(t, front, key, "--api-desc", wrongCA, "--tls-ca", p.CA); code != reports.ExitConformant {
		t.Errorf("--tls-ca over a description naming another CA: exit %d, want 0:\n%s", code, all)
	}
	missing := desc("missing.json", map[string]string{"ca": "no-such-ca.pem"})
	code, all := runFiles(t, front, key, "--api-desc", missing)
	if code != reports.ExitUsage || !strings.Contains(all, missing+": tls.ca "+filepath.Join(dir, "no-such-ca.pem")+": no such file") {
		t.Errorf("a description naming a missing CA: exit %d, want 3 naming the description, the field and the path:\n%s", code, all)
	}
	// The profile and the description naming different material is
	// ambiguous: exit 3.
	prof := writeTLSFile(t, dir, "p.yaml", "schema: onceproof.profile/v1\nname: two\nhttp:\n  repeatedId: conflict\ntls:\n  ca: "+filepath.Base(other.CA)+"\n")
	if code, all := runFiles(t, front, key, "--api-desc", good, "--profile", prof); code != reports.ExitUsage || !strings.Contains(all, "different tls material") {
		t.Errorf("a profile and a description naming different material: exit %d, want 3:\n%s", code, all)
	}
}
