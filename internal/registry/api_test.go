package registry

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/apidesc"
	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// runAPI starts key=address through the registry, runs the api suite (the
// given rules; none: every rule), and stops it; a race rule that is not want is run again, up to three runs in
// all, as the self-test does. Nothing the start made may be left.
func runAPI(t *testing.T, address string, want map[string]verdict.Verdict, rules ...string) map[string]verdict.Result {
	t.Helper()
	k, ok := Targets().Get("api/http")
	if !ok {
		t.Fatal("api/http not registered")
	}
	ref, err := target.Parse("api/http=" + address)
	if err != nil {
		t.Fatal(err)
	}
	st, err := k.Start(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]verdict.Result{}
	for _, r := range runner.Run(ref.String(), st.Register, runner.Options{Rules: rules}) {
		got[r.Rule] = r
	}
	for run := 2; run <= 3 && got["API-2.1"].Verdict != want["API-2.1"]; run++ {
		for _, r := range runner.Run(ref.String(), st.Register, runner.Options{Rules: []string{"API-2.1"}}) {
			if r.Rule == "API-2.1" {
				got[r.Rule] = r
			}
		}
	}
	if err := st.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if left := leftovers.Pending(); len(left) > 0 {
		t.Errorf("left after the run: %v", left)
	}
	return got
}

// A service in another language, started by the kit as a command: the
// Python example's correct variant passes every rule (API-1.5 across the
// kit's SIGKILL and restart included); its check-then-insert variant fails
// the concurrent rule.
func TestPythonServiceCertified(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed for the api suite's cross-language example: ", err)
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "examples", "api", "python", "service.py"))
	if err != nil {
		t.Fatal(err)
	}
	// {data}: the kit starts two replicas over one database.
	cmd := "cmd:" + py + " " + script + " --port {port} --db {data}/orders.db"

	t.Run("correct", func(t *testing.T) {
		got := runAPI(t, cmd, map[string]verdict.Verdict{"API-2.1": verdict.Pass})
		for _, id := range []string{"API-1.1", "API-1.2", "API-1.3", "API-1.4", "API-1.5", "API-1.6", "API-2.1", "API-3.1", "API-3.2", "API-4.1", "API-5.1", "API-5.2", "API-5.3"} {
			if r := got[id]; r.Verdict != verdict.Pass {
				t.Errorf("%s: %s: %s", id, r.Verdict, r.Reason)
			}
		}
	})
	t.Run("check-then-insert", func(t *testing.T) {
		// Only the rules asserted: the variant's race and the basics it
		// keeps (the rest of the suite is the correct variant's run).
		got := runAPI(t, cmd+" --variant check-then-insert", map[string]verdict.Verdict{"API-2.1": verdict.Fail}, "API-1.1", "API-1.2", "API-1.3", "API-2.1")
		if r := got["API-2.1"]; r.Verdict != verdict.Fail || !strings.Contains(r.Reason, "answered as creations") {
			t.Errorf("API-2.1: %s: %s; want fail with two creations", r.Verdict, r.Reason)
		} else {
			t.Logf("API-2.1: %s", r.Reason)
		}
		for _, id := range []string{"API-1.1", "API-1.2", "API-1.3"} {
			if r := got[id]; r.Verdict != verdict.Pass {
				t.Errorf("%s: %s: %s (the variant's only defect is the race)", id, r.Verdict, r.Reason)
			}
		}
	})
}

// The api kinds: both references are defaults (a bare run checks both
// contracts), api/http takes a URL or a command, and each mutant names the
// rules it must fail.
func TestAPIKinds(t *testing.T) {
	r := Targets()
	for _, key := range []string{"api/reference", "api/reference-replay"} {
		k, ok := r.Get(key)
		if !ok || !k.Default || !k.Reference || k.Modes[0] != target.Embedded {
			t.Errorf("%s: %+v, want an embedded default reference", key, k)
		}
	}
	k, ok := r.Get("api/http")
	if !ok || !k.Supports(target.External) || !k.Supports(target.Command) {
		t.Errorf("api/http: %+v, want URL and command modes", k)
	}
	mutants := 0
	for _, k := range r.Kinds("api", true) {
		if k.Mutant {
			mutants++
			if len(k.MustFail) == 0 || !strings.HasPrefix(k.Name, "mutant-") {
				t.Errorf("%s: a mutant needs rules it must fail and a mutant- name", k.Key())
			}
		}
	}
	if mutants < 6 {
		t.Errorf("%d api mutants, want at least 6", mutants)
	}
}

// The profile's http section chooses the contract when no --api-desc is
// given; --api-desc wins.
func TestAPIDescriptionFromProfile(t *testing.T) {
	p := &profile.Profile{HTTP: &profile.HTTP{RepeatedID: profile.RepeatedReplay}}
	d, err := APIDescription(target.Options{Profile: p})
	if err != nil || d.Contract != apidesc.Replay {
		t.Errorf("profile replay: %v, %v", d, err)
	}
	d, err = APIDescription(target.Options{})
	if err != nil || d.Contract != apidesc.Reject409 {
		t.Errorf("no profile: %v, %v", d, err)
	}
	file := filepath.Join("..", "..", "examples", "api", "descriptions", "payments-replay.yaml")
	d, err = APIDescription(target.Options{Profile: &profile.Profile{HTTP: &profile.HTTP{RepeatedID: profile.RepeatedConflict}}, APIDesc: file})
	if err != nil || d.Contract != apidesc.Replay || d.File != file {
		t.Errorf("--api-desc: %v, %v", d, err)
	}
}
