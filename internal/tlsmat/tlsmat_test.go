package tlsmat_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/tlsmat"
	"github.com/onceproof/tck/internal/tlsmat/tlstest"
)

func TestConfigTrustsTheGivenCA(t *testing.T) {
	dir := t.TempDir()
	p := tlstest.New(t, dir, "a")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	srv.TLS = p.ServerConfig(t, true)
	srv.StartTLS()
	defer srv.Close()

	get := func(m tlsmat.Material) error {
		cfg, err := m.Config()
		if err != nil {
			t.Fatalf("Config: %v", err)
		}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
		resp, err := c.Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(tlsmat.Material{CA: p.CA, Cert: p.ClientCert, Key: p.ClientKey}); err != nil {
		t.Fatalf("with the CA and a client certificate: %v", err)
	}
	if err := get(tlsmat.Material{CA: p.CA}); err == nil {
		t.Error("a server that verifies clients accepted none")
	}
	other := tlstest.New(t, dir, "b")
	if err := get(tlsmat.Material{CA: other.CA, Cert: p.ClientCert, Key: p.ClientKey}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("another CA: want a certificate error, got %v", err)
	}
	if err := get(tlsmat.Material{CA: p.CA, Cert: other.ClientCert, Key: other.ClientKey}); err == nil {
		t.Error("a client certificate of another CA was accepted")
	}
	if err := get(tlsmat.Material{CA: p.CA, Cert: p.ClientCert, Key: p.ClientKey, ServerName: "elsewhere.example"}); err == nil {
		t.Error("a server name the certificate does not hold was accepted")
	}
}

func TestEmptyIsNil(t *testing.T) {
	cfg, err := tlsmat.Material{}.Config()
	if cfg != nil || err != nil {
		t.Fatalf("empty material: %v, %v", cfg, err)
	}
	cfg, err = tlsmat.Material{ServerName: "x"}.Config()
	if err != nil || cfg.ServerName != "x" || cfg.MinVersion != tls.VersionTLS12 {
		t.Fatalf("server name alone: %+v, %v", cfg, err)
	}
}

// A file that cannot be used is one line naming flag and file, and never
// any byte of a key.
func TestBadFilesAreOneLineWithoutTheKey(t *testing.T) {
	dir := t.TempDir()
	p := tlstest.New(t, dir, "a")
	q := tlstest.New(t, dir, "b")
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not pem at all"), 0o600); err != nil {
		t.Fatal(err)
	}
	keyPEM, _ := os.ReadFile(p.ClientKey)
	cases := []struct {
		m          tlsmat.Material
		flag, want string
	}{
		{tlsmat.Material{CA: filepath.Join(dir, "missing.pem")}, "--tls-ca", "no such file"},
		{tlsmat.Material{CA: dir}, "--tls-ca", "not a regular file"},
		{tlsmat.Material{CA: junk}, "--tls-ca", "no PEM certificate"},
		{tlsmat.Material{CA: p.ClientKey}, "--tls-ca", "no PEM certificate"},
		{tlsmat.Material{Cert: p.ClientCert}, "--tls-cert", "both --tls-cert and --tls-key"},
		{tlsmat.Material{Key: p.ClientKey}, "--tls-cert", "both --tls-cert and --tls-key"},
		{tlsmat.Material{Cert: p.ClientKey, Key: p.ClientKey}, "--tls-cert", "no PEM certificate"},
		{tlsmat.Material{Cert: p.ClientCert, Key: p.ClientCert}, "--tls-key", "no PEM private key"},
		{tlsmat.Material{Cert: p.ClientCert, Key: q.ClientKey}, "--tls-key", "is not the private key"},
	}
	for _, c := range cases {
		err := c.m.Check()
		if err == nil {
			t.Errorf("%+v: accepted", c.m)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, c.flag) || !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
			t.Errorf("%+v: %q, want %s ... %s on one line", c.m, msg, c.flag, c.want)
		}
		if strings.Contains(msg, "PRIVATE") || strings.Contains(msg, string(keyPEM[40:80])) {
			t.Errorf("%+v: the message shows key material: %q", c.m, msg)
		}
	}
}

// A file's tls section: relative paths from the file's folder, absolute
// ones kept; an unusable file is named by the file and its field.
func TestFilesMaterial(t *testing.T) {
	m := tlsmat.Files{CA: "certs/ca.pem", Key: "/abs/key.pem", ServerName: "n"}.Material("/etc/tck/profile.yaml")
	if m.CA != "/etc/tck/certs/ca.pem" || m.Key != "/abs/key.pem" || m.ServerName != "n" || m.Origin != "/etc/tck/profile.yaml" {
		t.Errorf("material %+v", m)
	}
	if !(tlsmat.Files{}).Material("x.yaml").Empty() {
		t.Error("an empty section is material")
	}
	err := tlsmat.Material{CA: "/no/such/ca.pem", Origin: "p.yaml"}.Check()
	if err == nil || err.Error() != "p.yaml: tls.ca /no/such/ca.pem: no such file" {
		t.Errorf("error %v", err)
	}
	if err := (tlsmat.Material{CA: "/no/such/ca.pem"}).Check(); err == nil || err.Error() != "--tls-ca /no/such/ca.pem: no such file" {
		t.Errorf("a flag's error %v", err)
	}
}
