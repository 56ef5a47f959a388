package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/reports"
)

// TestFlags: a target is never split inside its address, a suite given
// twice runs once, a single-value flag given twice is refused (issue 21,
// input 12).
func TestFlags(t *testing.T) {
	code, stdout, stderr := tck(t, "plan", "--suite", "broker", "--suite", "broker,broker", "--target", "broker/kafka=kafka://h:1?bootstrap=h:2,h:3")
	if code != 0 || strings.Count(stdout, "broker/kafka=kafka://h:1?bootstrap=h:2,h:3 (") != 1 || strings.Count(stdout, "BR-1.1 ") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q: want the bootstrap list whole, once", code, stdout, stderr)
	}
	code, stdout, _ = tck(t, "plan", "--rule", "BR-1.1,BR-1.1", "--rule", "BR-1.1", "--suite", "broker")
	if code != 0 || strings.Count(stdout, "BR-1.1 ") != 1 {
		t.Errorf("a rule given three times: exit %d, stdout %q", code, stdout)
	}
	dir := t.TempDir()
	for _, args := range [][]string{
		{"run", "--out", filepath.Join(dir, "a"), "--out", filepath.Join(dir, "b")},
		{"run", "--out=" + filepath.Join(dir, "a"), "--quiet", "--quiet"},
		{"plan", "--format", "json", "--format=text"},
		{"report", "--in", dir, "--in", dir},
	} {
		code, stdout, stderr := tck(t, args...)
		if code != reports.ExitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "is given twice") {
			t.Errorf("tck %v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) > 0 {
		t.Errorf("a refused command line wrote %v", m)
	}
}
