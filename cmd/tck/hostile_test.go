package main

import (
	"bufio"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/reports"
)

// hostile is what a target, a profile or a results.json may send: a
// window title (OSC 0 ... BEL), a screen clear, an OSC 8 hyperlink, a
// forged line, markup for report.md.
const hostile = "\x1b]0;pwned\x07\x1b[2J\x1b]8;;http://evil.example\x1b\\all rules passed\x1b]8;;\x1b\\\n# forged heading <script>alert(1)</script><img src=x onerror=alert(1)>"

// rawControl finds a control character (but the layout's newline and tab).
func rawControl(s string) bool {
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f {
			return true
		}
	}
	return false
}

// checkOutputs: no control character on stdout, stderr or in a report
// file; no markup of the target's making in report.md (issue 21, inputs 5
// and 6).
func checkOutputs(t *testing.T, dir string, outputs map[string]string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(p, ".json") && !strings.HasSuffix(p, ".log") {
			data, _ := os.ReadFile(p)
			outputs[filepath.Base(p)] = string(data)
		}
		return nil
	})
	for where, text := range outputs {
		if rawControl(text) {
			t.Errorf("%s holds a raw control character: %q", where, text)
		}
	}
	if md, ok := outputs[reports.FileMarkdown]; ok {
		for _, bad := range []string{"<script>", "<img", "\n# forged"} {
			if strings.Contains(md, bad) {
				t.Errorf("report.md holds %q of the target's making", bad)
			}
		}
		if !strings.Contains(md, "forged heading") {
			t.Errorf("report.md does not show the hostile text at all")
		}
	}
}

func TestHostileTextNeverRaw(t *testing.T) {
	t.Run("profile names", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "out")
		prof := filepath.Join(t.TempDir(), "p.yaml")
		quoted := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\x1b", `\e`, "\x07", `\a`, "\n", `\n`).Replace(hostile)
		os.WriteFile(prof, []byte("schema: onceproof.profile/v1\nname: \""+quoted+"\"\n"), 0o644)
		code, stdout, stderr := tck(t, "plan", "--profile", prof, "--out", dir)
		if code != 0 || !strings.Contains(stdout, `\x1b]0;pwned\x07\x1b[2J`) || !strings.Contains(stdout, `\x0a# forged heading`) {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		checkOutputs(t, dir, map[string]string{"stdout": stdout, "stderr": stderr})
		// The same names through a crafted results.json: report --in and diff.
		code, stdout, stderr = tck(t, "report", "--in", dir)
		if code > reports.ExitInconclusive {
			t.Errorf("report --in: exit %d, %s", code, stderr)
		}
		checkOutputs(t, dir, map[string]string{"report stdout": stdout, "report stderr": stderr})
		code, stdout, stderr = tck(t, "report", "diff", dir, dir)
		if code != 0 {
			t.Errorf("report diff: exit %d, %s", code, stderr)
		}
		checkOutputs(t, t.TempDir(), map[string]string{"diff stdout": stdout, "diff stderr": stderr})
	})
	t.Run("HTTP service", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusTeapot)
			w.Write([]byte(hostile))
		}))
		defer srv.Close()
		dir := filepath.Join(t.TempDir(), "out")
		code, stdout, stderr := tck(t, "run", "--target", "api/http="+srv.URL, "--out", dir)
		if code != reports.ExitUnavailable {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		if !strings.Contains(stderr, `\x1b]0;pwned\x07`) {
			t.Errorf("the service's answer is not shown escaped: %q", stderr)
		}
		checkOutputs(t, dir, map[string]string{"stdout": stdout, "stderr": stderr})
	})
	t.Run("broker error", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					c.Write([]byte("INFO {\"server_id\":\"x\",\"version\":\"2.10.0\",\"max_payload\":1048576}\r\n"))
					bufio.NewReader(c).ReadString('\n')
					c.Write([]byte("-ERR '" + strings.ReplaceAll(hostile, "\n", " ") + "'\r\n"))
				}()
			}
		}()
		dir := filepath.Join(t.TempDir(), "out")
		code, stdout, stderr := tck(t, "run", "--suite", "broker", "--target", "broker/nats=nats://"+ln.Addr().String(), "--rule", "BR-2.1", "--out", dir)
		if code != reports.ExitUnavailable {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		if !strings.Contains(stderr, `\x1b]0;pwned`) {
			t.Errorf("the broker's error is not shown: %q", stderr)
		}
		checkOutputs(t, dir, map[string]string{"stdout": stdout, "stderr": stderr})
	})
}
