package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onceproof/tck/adapters/api/reference"
	"github.com/onceproof/tck/internal/apidesc"
	"github.com/onceproof/tck/internal/reports"
)

// oneLine fails t unless stderr is one line without a stack trace.
func requireOneLine(t *testing.T, what, stderr string) {
	t.Helper()
	if n := strings.Count(strings.TrimRight(stderr, "\n"), "\n"); n != 0 || stderr == "" {
		t.Errorf("%s: want one line on stderr, got %q", what, stderr)
	}
	if strings.Contains(stderr, "goroutine") || strings.Contains(stderr, "panic") {
		t.Errorf("%s: stack trace on stderr: %q", what, stderr)
	}
}

// A description that does not parse is exit 3 naming the file, line and
// field, before anything starts: no report folder.
func TestAPIDescriptionBadIsExit3(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"syntax.yaml":   "contract: reject-409\ncreate: [\n",
		"contract.yaml": "contract: maybe\ncreate:\n  path: /o\n  id: {in: header, name: K}\n  body: {q: 1}\n  vary: q\nread:\n  path: /o/{id}\n",
		"idin.yaml":     "contract: replay\ncreate:\n  path: /o\n  id: {in: cookie, name: K}\n  body: {q: 1}\n  vary: q\nread:\n  path: /o/{id}\n",
		"readpath.yaml": "contract: replay\ncreate:\n  path: /o\n  id: {in: header, name: K}\n  body: {q: 1}\n  vary: q\nread:\n  path: /o\n",
	}
	want := map[string]string{
		"syntax.yaml": "syntax.yaml:", "contract.yaml": "contract.yaml:1: contract:", "idin.yaml": "idin.yaml:4: create.id.in:", "readpath.yaml": "readpath.yaml:8: read.path:",
	}
	for name, body := range cases {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "never-"+name)
		code, stdout, stderr := tck(t, "run", "--suite", "api", "--target", "api/http=http://127.0.0.1:1", "--api-desc", file, "--out", out, "--quiet")
		if code != reports.ExitUsage {
			t.Errorf("%s: exit %d, want 3 (stderr %q)", name, code, stderr)
		}
		requireOneLine(t, name, stderr)
		if !strings.Contains(stderr, want[name]) {
			t.Errorf("%s: stderr %q does not name %q", name, stderr, want[name])
		}
		if stdout != "" {
			t.Errorf("%s: unexpected stdout %q", name, stdout)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: a usage error left a report folder behind", name)
		}
	}
	code, _, stderr := tck(t, "run", "--suite", "api", "--api-desc", filepath.Join(dir, "syntax.yaml"), "--out", filepath.Join(dir, "never"))
	if code != reports.ExitUsage || !strings.Contains(stderr, "api/http") {
		t.Errorf("--api-desc without an api/http target: exit %d, stderr %q", code, stderr)
	}
}

// A URL that does not answer, and a read-back path that answers 404 for a
// resource just created, are exit 4 in one line naming the target and the
// description's field.
func TestAPITargetUnreachableOrMisdescribedIsExit4(t *testing.T) {
	t.Parallel() // see parallelTests in bin_test.go
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	code, _, stderr := tck(t, "run", "--suite", "api", "--target", "api/http="+dead, "--out", t.TempDir(), "--quiet")
	if code != reports.ExitUnavailable || !strings.Contains(stderr, "api/http="+dead) || !strings.Contains(stderr, "does not answer") {
		t.Errorf("dead URL: exit %d, stderr %q; want 4 naming the target", code, stderr)
	}
	requireOneLine(t, "dead URL", stderr)

	code, _, stderr = tck(t, "run", "--suite", "api", "--target", "api/http=cmd:sh -c 'echo no port here >&2; exit 3'", "--out", t.TempDir(), "--quiet")
	if code != reports.ExitUnavailable || !strings.Contains(stderr, "api/http=cmd:") || !strings.Contains(stderr, "exited before it was ready") {
		t.Errorf("a command that exits: exit %d, stderr %q; want 4 naming the target", code, stderr)
	}
	requireOneLine(t, "a command that exits", stderr)

	srv, err := reference.Start(t.Context(), apidesc.Reject409)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	desc := filepath.Join(t.TempDir(), "wrong-read.yaml")
	if err := os.WriteFile(desc, []byte(`contract: reject-409
create:
  path: /orders
  id: {in: header, name: Idempotency-Key}
  body: {item: book, qty: 1}
  vary: qty
read:
  path: /order/{id}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = tck(t, "run", "--suite", "api", "--target", "api/http="+srv.URL(), "--api-desc", desc, "--out", t.TempDir(), "--quiet")
	if code != reports.ExitUnavailable || !strings.Contains(stderr, "wrong-read.yaml: read.path /order/{id}") || !strings.Contains(stderr, "reads back as 404") {
		t.Errorf("read path 404: exit %d, stderr %q; want 4 naming the file and read.path", code, stderr)
	}
	requireOneLine(t, "read path 404", stderr)
}
