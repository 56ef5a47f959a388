package api_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/api"
)

// LoadDescription reads a description an author writes, and names the file
// and line of a malformed one.
func TestLoadDescription(t *testing.T) {
	good := filepath.Join("..", "..", "examples", "api", "descriptions", "wow-orders.yaml")
	if d, err := api.LoadDescription(good); err != nil || d == nil {
		t.Fatalf("the example's description: %v", err)
	}
	text, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, append(text, []byte("contrakt: replay\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := api.LoadDescription(bad); err == nil || !strings.Contains(err.Error(), "bad.yaml:") || !strings.Contains(err.Error(), "contrakt") {
		t.Fatalf("an unknown field: %v, want an error naming bad.yaml, its line and the field", err)
	}
}

// UnknownIsSkip and ReportTo as an author writes them: a service that is not
// listening leaves the rules undecided, which skips their subtests instead of
// failing them, and the report written to the folder holds no pass.
func TestUnknownIsSkipAndReportTo(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	_ = l.Close() // nothing listens there now
	dir := t.TempDir()
	t.Run("check", func(t *testing.T) {
		api.Check(t, api.Target{URL: url, Desc: api.Default(api.Reject409), Timeout: 10 * time.Second}, api.UnknownIsSkip(), api.ReportTo(dir))
	})
	rep, err := reports.ReadBundle(dir)
	if err != nil {
		t.Fatalf("the report ReportTo wrote: %v", err)
	}
	if len(rep.Results) == 0 {
		t.Fatal("the report holds no result")
	}
	for _, r := range rep.Results {
		if r.Verdict == verdict.Pass || r.Verdict == verdict.Fail {
			t.Errorf("%s: %s against a service that is not listening: %s", r.Rule, r.Verdict, r.Reason)
		}
	}
}
