package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/onceproof/tck/internal/reports"
)

// hostileInputs are paths no file the kit reads may be (issue 35): a
// device that never ends, a FIFO no one writes (its open would block), a
// directory, and a 200 MB sparse file. Each is refused before it is read:
// one line naming the path and what it is, exit 3. (The figures, 1 s and
// 100 MB, were measured by hand with /usr/bin/time -v; a test asserting
// time would fail on a loaded runner.)
func hostileInputs(t *testing.T) map[string]struct{ path, want string } {
	t.Helper()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(200 << 20)
	f.Close()
	zero := filepath.Join(dir, "zero")
	os.Symlink("/dev/zero", zero)
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	return map[string]struct{ path, want string }{
		"/dev/zero":          {"/dev/zero", "/dev/zero: is a character device, not a regular file"},
		"symlink /dev/zero":  {zero, "zero: is a character device, not a regular file"},
		"FIFO":               {fifo, "fifo: is a named pipe (FIFO), not a regular file"},
		"directory":          {sub, "sub: is a directory, not a regular file"},
		"200 MB sparse file": {big, "big.yaml: 209715200 bytes, more than 1048576 bytes (1 MiB), the limit for the"},
	}
}

func wantOneLine(t *testing.T, code int, stdout, stderr, want string) {
	t.Helper()
	if code != reports.ExitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stdout %q, stderr %q: want exit 3 and one line holding %q", code, stdout, stderr, want)
	}
}

func TestHostileInputProfile(t *testing.T) {
	for name, in := range hostileInputs(t) {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := tck(t, "plan", "--profile", in.path)
			wantOneLine(t, code, stdout, stderr, in.want)
			code, stdout, stderr = tck(t, "run", "--suite", "broker", "--target", "broker/nats", "--profile", in.path, "--out", filepath.Join(t.TempDir(), "out"))
			wantOneLine(t, code, stdout, stderr, in.want)
		})
	}
}

func TestHostileInputAPIDesc(t *testing.T) {
	for name, in := range hostileInputs(t) {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			code, stdout, stderr := tck(t, "run", "--target", "api/http=http://127.0.0.1:1", "--api-desc", in.path, "--out", out)
			wantOneLine(t, code, stdout, stderr, in.want)
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a refused description wrote %s", out)
			}
		})
	}
}

// TestHostileInputReportIn: results.json is each hostile input (a symlink
// to it), for report --in and report diff.
func TestHostileInputReportIn(t *testing.T) {
	for name, in := range hostileInputs(t) {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Symlink(in.path, filepath.Join(dir, reports.FileJSON)); err != nil {
				t.Fatal(err)
			}
			want := strings.Replace(in.want, "1048576 bytes (1 MiB)", "67108864 bytes (64 MiB)", 1)
			want = want[strings.Index(want, ": ")+2:]
			code, stdout, stderr := tck(t, "report", "--in", dir)
			wantOneLine(t, code, stdout, stderr, "results.json: "+want)
			code, stdout, stderr = tck(t, "report", "diff", dir, dir)
			wantOneLine(t, code, stdout, stderr, "results.json: "+want)
		})
	}
}

// TestAPIDescRequestPartsExit3: a description the HTTP client would refuse
// (a CR LF in a header name) or a server could not take (a 900 KB header
// name) is exit 3 naming the field, found at load time before the service
// is reached; it was exit 4, "does not answer" (issue 35).
func TestAPIDescRequestPartsExit3(t *testing.T) {
	var reached atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Store(true) }))
	defer srv.Close()
	desc := "contract: reject-409\ncreate:\n  path: /orders\n  id: {in: header, name: NAME}\n  body: {item: book, qty: 1}\n  vary: qty\nread: {path: \"/orders/{id}\"}\n"
	for name, c := range map[string]struct{ header, want string }{
		"CRLF in a header name": {`"Idempotency-Key\r\nX-Injected: 1"`, `d.yaml:4: create.id.name: "Idempotency-Key\r\nX-Injected: 1" is not a header name`},
		"900 KB header name":    {strings.Repeat("K", 900<<10), "d.yaml:4: create.id.name: 921600 bytes, more than 256, the longest header name the kit sends"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "d.yaml")
			os.WriteFile(file, []byte(strings.Replace(desc, "NAME", c.header, 1)), 0o644)
			code, stdout, stderr := tck(t, "run", "--target", "api/http="+srv.URL, "--api-desc", file, "--out", filepath.Join(dir, "out"))
			wantOneLine(t, code, stdout, stderr, strings.ReplaceAll(strings.ReplaceAll(c.want, "\r", `\r`), "\n", `\n`))
			if len(stderr) > 1000 || rawControl(stderr) {
				t.Errorf("stderr is %d bytes or holds a control character: %.200q", len(stderr), stderr)
			}
		})
	}
	if reached.Load() {
		t.Errorf("the service was reached with a malformed description")
	}
}
