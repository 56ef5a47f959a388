package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/procs"
	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/tlsmat/tlstest"
)

// pgTLS starts a private PostgreSQL (never the shared one of
// scripts/postgres-local.sh) that accepts only TLS connections
// (hostssl, scram-sha-256) with the PKI's server certificate, on a free
// port; it returns the port. It skips, saying why, where no server
// binaries are installed or (as root) no postgres user can run them.
func pgTLS(t *testing.T, p *tlstest.PKI, pw string) int {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	var bin string
	if len(bins) > 0 {
		bin = filepath.Dir(bins[len(bins)-1])
	} else if pc, err := exec.LookPath("pg_ctl"); err == nil {
		bin = filepath.Dir(pc)
	} else {
		t.Skip("no PostgreSQL server binaries (pg_ctl, initdb) installed: the live sslmode test needs them")
	}
	// The server refuses to run as root: as root, run it as postgres.
	asPG := func(args ...string) *exec.Cmd { return exec.Command(args[0], args[1:]...) }
	var uid, gid int = -1, -1
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skip("running as root and there is no postgres user to run a PostgreSQL server as")
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		asPG = func(args ...string) *exec.Cmd {
			return exec.Command("runuser", append([]string{"-u", "postgres", "--"}, args...)...)
		}
	}
	root, err := os.MkdirTemp("", "tck-pg-tls-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	own := func(path string, mode os.FileMode) {
		t.Helper()
		if uid >= 0 {
			if err := os.Chown(path, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(root, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	own(data, 0o700)
	pwFile := filepath.Join(root, "pw")
	if err := os.WriteFile(pwFile, []byte(pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	own(pwFile, 0o600)
	if out, err := asPG(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--pwfile", pwFile,
		"--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v: %s", err, out)
	}
	for _, f := range []struct{ from, to string }{{p.ServerCert, "server.crt"}, {p.ServerKey, "server.key"}} {
		b, err := os.ReadFile(f.from)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(data, f.to)
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
		own(dst, 0o600)
	}
	// TLS only: no plain host line.
	hba := filepath.Join(data, "pg_hba.conf")
	if err := os.WriteFile(hba, []byte("local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	own(hba, 0o600)
	port, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	opts := fmt.Sprintf("-c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key -c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s -c fsync=off", port, data)
	logFile := filepath.Join(data, "server.log") // written by the postgres user
	if out, err := asPG(filepath.Join(bin, "pg_ctl"), "-D", data, "-o", opts, "-l", logFile, "-w", "-t", "300", "start").CombinedOutput(); err != nil {
		lb, _ := os.ReadFile(logFile)
		t.Fatalf("pg_ctl start: %v: %s %s", err, out, lb)
	}
	t.Cleanup(func() { _ = asPG(filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop").Run() })
	return port
}

// eventstore/postgres over TLS: sslmode=verify-full with the CA from
// --tls-ca passes; the same DSN without it, and a wrong password, are exit
// 4 with one line naming the target; no password or key in any output.
func TestTLSPostgresVerifyFull(t *testing.T) {
	dir := t.TempDir()
	p := tlstest.New(t, dir, "a")
	const pw = "s3cr3t-pg-pw"
	port := pgTLS(t, p, pw)
	key := string(tlstest.KeyBytes(t, p.ServerKey))
	dsn := func(pass string) string {
		return fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/postgres?sslmode=verify-full&connect_timeout=20", pass, port)
	}
	run := func(url string, flags ...string) (int, string) {
		out := t.TempDir()
		args := append([]string{"run", "--suite", "eventstore", "--target", "eventstore/postgres=" + url,
			"--rule", "ES-1.1", "--rule", "ES-1.7", "--out", out, "--quiet"}, flags...)
		code, stdout, stderr := tck(t, args...)
		all := stdout + "\n" + stderr
		files, _ := filepath.Glob(filepath.Join(out, "*"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			all += "\n" + string(b)
		}
		if code != reports.ExitConformant {
			t.Logf("exit %d: %s", code, strings.TrimSpace(stderr))
			requireOneLine(t, "postgres over TLS", stderr)
			if !strings.Contains(stderr, "eventstore/postgres") {
				t.Errorf("stderr does not name the target: %q", stderr)
			}
		}
		if strings.Contains(all, pw) || strings.Contains(all, key) {
			t.Errorf("%v: the password or a key appears in an output", flags)
		}
		return code, all
	}
	if code, all := run(dsn(pw), "--tls-ca", p.CA); code != reports.ExitConformant || !strings.Contains(all, "2 pass") {
		t.Fatalf("verify-full with the CA: exit %d, want 0 and both rules passed:\n%s", code, all)
	}
	if code, all := run(dsn(pw)); code != reports.ExitUnavailable {
		t.Errorf("verify-full without the CA: exit %d, want 4:\n%s", code, all)
	}
	if code, all := run(dsn("wrong-"+pw), "--tls-ca", p.CA); code != reports.ExitUnavailable || !strings.Contains(all, "password authentication failed") {
		t.Errorf("a wrong password: exit %d, want 4 naming the refused password:\n%s", code, all)
	}
	plain := strings.Replace(dsn(pw), "sslmode=verify-full", "sslmode=disable", 1)
	if code, all := run(plain); code != reports.ExitUnavailable || !strings.Contains(all, "no encryption") {
		t.Errorf("sslmode=disable on a TLS-only server: exit %d, want 4 naming the refused plain connection:\n%s", code, all)
	}
}
