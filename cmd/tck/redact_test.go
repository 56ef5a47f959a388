package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/onceproof/tck/internal/reports"
)

// TestCredentialsRedactedEverywhere runs the CLI against NATS servers that
// need a token and a user:password, and one that is not there, and checks
// that no secret appears on stdout, stderr or in any file of the report.
func TestCredentialsRedactedEverywhere(t *testing.T) {
	const token, password = "T0KENs3cr3tvalue", "pw-s3cr3t-value"
	tokenSrv := natsServer(t, &server.Options{Authorization: token})
	userSrv := natsServer(t, &server.Options{Username: "kit", Password: password})
	cases := []struct {
		name, url, secret string
		code              int
	}{
		{"token", "nats://" + token + "@" + tokenSrv, token, reports.ExitConformant},
		{"user:password", "nats://kit:" + password + "@" + userSrv, password, reports.ExitConformant},
		{"token, unreachable", "nats://" + token + "@127.0.0.1:1", token, reports.ExitUnavailable},
		{"query password, unreachable", "nats://127.0.0.1:1?password=" + password, password, reports.ExitUnavailable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			code, stdout, stderr := tck(t, "run", "--quiet", "--suite", "broker", "--target", "broker/nats="+c.url, "--rule", "BR-2.1", "--out", dir)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, c.code, stderr)
			}
			for where, text := range map[string]string{"stdout": stdout, "stderr": stderr} {
				if strings.Contains(text, c.secret) {
					t.Errorf("%s shows the secret: %q", where, text)
				}
			}
			files := 0
			_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				files++
				data, _ := os.ReadFile(path)
				if strings.Contains(string(data), c.secret) {
					t.Errorf("%s holds the secret", path)
				}
				return nil
			})
			if files < 5 {
				t.Errorf("only %d files written, want the four reports, the log and histories", files)
			}
		})
	}
}

// natsServer starts an embedded JetStream server with the given auth.
func natsServer(t *testing.T, o *server.Options) string {
	t.Helper()
	o.Host, o.Port, o.JetStream, o.StoreDir, o.NoLog, o.NoSigs = "127.0.0.1", -1, true, t.TempDir(), true, true
	s, err := server.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(s.Shutdown)
	return s.Addr().String()
}

// TestOddCredentialFormsRedactedEverywhere: passwords holding what a
// pattern would stop at (issue 21, input 4) never reach stderr, stdout or a
// report file, whether the target is unreachable (exit 4, every report
// written) or the address is refused (exit 3, nothing written).
func TestOddCredentialFormsRedactedEverywhere(t *testing.T) {
	cases := []struct {
		addr, secret string
		code         int
	}{
		{"postgres://user:p@ssRawAtPw@127.0.0.1:1/db?connect_timeout=2", "ssRawAtPw", reports.ExitUnavailable},
		{"postgres://user:pa/Secret@127.0.0.1:1/db?connect_timeout=2", "Secret", reports.ExitUsage},
		{"postgres://user:x Secret@127.0.0.1:1/db?connect_timeout=2", "Secret", reports.ExitUsage},
		{"postgres://user:pässwörtSecret@127.0.0.1:1/db?connect_timeout=2", "Secret", reports.ExitUsage},
		{"user:Secret@127.0.0.1", "Secret", reports.ExitUsage},
		{"user:x Secret@127.0.0.1", "Secret", reports.ExitUsage},
		{"postgres://127.0.0.1:1/db?connect_timeout=2&password='a%20Secret'", "Secret", reports.ExitUnavailable},
	}
	for _, c := range cases {
		t.Run(c.addr, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			code, stdout, stderr := tck(t, "run", "--target", "eventstore/postgres="+c.addr, "--out", dir)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, c.code, stderr)
			}
			for where, text := range map[string]string{"stdout": stdout, "stderr": stderr} {
				if strings.Contains(text, c.secret) {
					t.Errorf("%s shows the secret: %q", where, text)
				}
			}
			_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return nil
				}
				data, _ := os.ReadFile(path)
				if strings.Contains(string(data), c.secret) {
					t.Errorf("%s holds the secret", path)
				}
				return nil
			})
			if _, err := os.Stat(dir); c.code == reports.ExitUsage && err == nil {
				t.Errorf("a refused address left %s behind", dir)
			}
		})
	}
}

// TestRedactKeepsHintPlaceholder: the Redis URL hint's placeholder reaches
// the user as written ("want redis://[user:password@]host:port/db"), not
// garbled into "[user:xxxxx@..."; the real password never appears (issue
// 35).
func TestRedactKeepsHintPlaceholder(t *testing.T) {
	const secret = "pw-s3cr3t-value"
	for _, url := range []string{"redis://u:" + secret + "@127.0.0.1:1/x", "redis://u:" + secret + "@127.0.0.1:1/0@x"} {
		dir := filepath.Join(t.TempDir(), "out")
		code, stdout, stderr := tck(t, "run", "--quiet", "--suite", "broker", "--target", "broker/redis="+url, "--rule", "BR-4.1", "--out", dir)
		if code != reports.ExitUnavailable || !strings.Contains(stderr, "(want redis://[user:password@]host:port/db)") {
			t.Errorf("%s: exit %d, stderr %q: want exit 4 and the hint as written", url, code, stderr)
		}
		if strings.Contains(stdout+stderr, secret) {
			t.Errorf("%s: the password is shown: %q %q", url, stdout, stderr)
		}
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if data, _ := os.ReadFile(p); strings.Contains(string(data), secret) {
					t.Errorf("%s holds the password", p)
				}
			}
			return nil
		})
	}
}
