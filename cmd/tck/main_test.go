package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/reports"
)

func tck(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestBadInputIsOneLineAndExit3(t *testing.T) {
	dir := t.TempDir()
	cases := [][]string{
		{"frobnicate"},
		{"run", "--no-such-flag"},
		{"run", "--suite", "nosuch"},
		{"run", "--target", "eventstore/nosuch"},
		{"run", "--target", "nonsense"},
		{"run", "--target", "eventstore/memory=ftp-ish"},
		{"run", "--target", "eventstore/memory="},
		{"run", "--rule", "ES-9.9"},
		{"run", "--suite", "broker", "--target", "eventstore/memory"},
		{"run", "--suite", "eventstore", "--rule", "BR-1.1"},
		{"run", "--target", "eventstore/memory", "--target", "eventstore/memory"},
		{"run", "stray-argument"},
		{"list", "--format", "yaml"},
		{"list", "--suite", "nosuch"},
		{"targets", "--suite", "nosuch"},
		{"selftest", "--suite", "nosuch"},
		{"report"},
		{"report", "--in", dir},
	}
	for _, args := range cases {
		code, stdout, stderr := tck(t, append(args, "--out", filepath.Join(dir, "never"))...)
		if args[0] != "run" {
			code, stdout, stderr = tck(t, args...)
		}
		if code != reports.ExitUsage {
			t.Errorf("tck %v: exit %d, want 3 (stderr %q)", args, code, stderr)
		}
		if n := strings.Count(strings.TrimRight(stderr, "\n"), "\n"); n != 0 || stderr == "" {
			t.Errorf("tck %v: want one line on stderr, got %q", args, stderr)
		}
		if strings.Contains(stderr, "goroutine") || strings.Contains(stderr, "panic") {
			t.Errorf("tck %v: stack trace on stderr: %q", args, stderr)
		}
		if stdout != "" {
			t.Errorf("tck %v: unexpected stdout %q", args, stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "never")); err == nil {
		t.Errorf("a usage error left a report folder behind")
	}
}

func TestUnreachableDatabaseExit4Redacted(t *testing.T) {
	out := t.TempDir()
	url := "postgres://kit:s3cr3t-pw@127.0.0.1:1/tck?connect_timeout=2"
	code, stdout, stderr := tck(t, "run", "--target", "eventstore/postgres="+url, "--out", out, "--quiet")
	if code != reports.ExitUnavailable {
		t.Fatalf("exit %d, want 4; stderr %q", code, stderr)
	}
	if !strings.Contains(stderr, "eventstore/postgres") {
		t.Errorf("stderr does not name the target: %q", stderr)
	}
	files, _ := filepath.Glob(filepath.Join(out, "*"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if bytes.Contains(data, []byte("s3cr3t-pw")) {
			t.Errorf("%s holds the password", f)
		}
	}
	if strings.Contains(stderr+stdout, "s3cr3t-pw") {
		t.Errorf("the password appears in the output: %q %q", stdout, stderr)
	}
}

func TestRunWritesTheBundle(t *testing.T) {
	out := t.TempDir()
	code, _, stderr := tck(t, "run", "--suite", "eventstore", "--target", "eventstore/memory", "--rule", "ES-1.1", "--rule", "ES-1.7", "--out", out, "--quiet")
	if code != reports.ExitConformant {
		t.Fatalf("exit %d, want 0; stderr %q", code, stderr)
	}
	for _, f := range []string{reports.FileJSON, reports.FileMarkdown, reports.FileHTML, reports.FileJUnit} {
		if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
	rep, err := reports.Read(filepath.Join(out, reports.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]string{}
	for _, r := range rep.Results {
		verdicts[r.Rule] = string(r.Verdict)
		if r.Reason == "" || r.Evidence == nil || r.Level == "" || r.Target != "eventstore/memory" {
			t.Errorf("result %s lacks reason, evidence, level or target: %+v", r.Rule, r)
		}
	}
	for _, rule := range catalog.All("eventstore") {
		want := "skipped"
		if rule.ID == "ES-1.1" || rule.ID == "ES-1.7" {
			want = "pass"
		}
		if verdicts[rule.ID] != want {
			t.Errorf("%s: verdict %q, want %q", rule.ID, verdicts[rule.ID], want)
		}
	}
	html, _ := os.ReadFile(filepath.Join(out, reports.FileHTML))
	if bytes.Contains(html, []byte("http://")) && !bytes.Contains(html, []byte(`xmlns="http://www.w3.org/2000/svg"`)) {
		t.Errorf("report.html refers to the network")
	}
}

func TestMutantFailsWithExit1(t *testing.T) {
	out := t.TempDir()
	code, _, stderr := tck(t, "run", "--target", "eventstore/mutant-string-errors", "--rule", "ES-1.3", "--out", out, "--quiet")
	if code != reports.ExitMustFailed {
		t.Fatalf("exit %d, want 1; stderr %q", code, stderr)
	}
}

func TestListJSON(t *testing.T) {
	code, stdout, _ := tck(t, "list", "--suite", "eventstore", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var doc struct {
		Rules []catalog.Rule `json:"rules"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Rules) != len(catalog.All("eventstore")) || len(doc.Rules) != 28 {
		t.Errorf("listed %d rules, want 28 (ES-1.1 to ES-1.18, ES-2.x, ES-3.1, ES-4.1, ES-4.2, ES-4.3)", len(doc.Rules))
	}
}

// TestVersionFlags: tck --version and tck -v print what tck version prints
// (issue 35: --version was an unknown command).
func TestVersionFlags(t *testing.T) {
	_, want, _ := tck(t, "version")
	if !strings.HasPrefix(want, "onceproof tck ") {
		t.Fatalf("tck version printed %q", want)
	}
	for _, arg := range []string{"--version", "-v", "-version"} {
		code, stdout, stderr := tck(t, arg)
		if code != 0 || stdout != want || stderr != "" {
			t.Errorf("tck %s: exit %d, stdout %q, stderr %q; want exit 0 and %q", arg, code, stdout, stderr, want)
		}
	}
}
