package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/tlsmat/tlstest"
)

// Unusable trust material is a usage error before anything starts: one
// line naming the flag and the file, never a byte of the key.
func TestBadInputTLSMaterialExit3(t *testing.T) {
	dir := t.TempDir()
	p := tlstest.New(t, dir, "a")
	key := string(tlstest.KeyBytes(t, p.ClientKey))
	cases := [][]string{
		{"--tls-ca", filepath.Join(dir, "missing.pem")},
		{"--tls-ca", p.ClientKey},
		{"--tls-cert", p.ClientCert},
		{"--tls-cert", p.ClientCert, "--tls-key", p.ClientCert},
	}
	for _, c := range cases {
		args := append([]string{"run", "--target", "broker/nats=tls://127.0.0.1:1", "--out", filepath.Join(dir, "never")}, c...)
		code, stdout, stderr := tck(t, args...)
		if code != reports.ExitUsage {
			t.Errorf("%v: exit %d, want 3 (stderr %q)", c, code, stderr)
		}
		if n := strings.Count(strings.TrimRight(stderr, "\n"), "\n"); n != 0 || !strings.Contains(stderr, "--tls-") {
			t.Errorf("%v: want one line naming the flag, got %q", c, stderr)
		}
		if strings.Contains(stdout+stderr, "PRIVATE") || strings.Contains(stdout+stderr, key) {
			t.Errorf("%v: the output shows the key", c)
		}
	}
}
