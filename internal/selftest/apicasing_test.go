package selftest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// TestAPIHeaderCasing runs API-1.2 against both api references and the
// case-sensitive-header mutant (issue 37, header names in other casings):
// the references pass; the mutant fails with a first line under 200
// characters that names the casing sent, and the same line again with the
// seed (the run's salt aside).
func TestAPIHeaderCasing(t *testing.T) {
	reg := registry.Targets()
	for _, name := range []string{"reference", "reference-replay", "mutant-case-sensitive-header"} {
		t.Run(name, func(t *testing.T) {
			k, ref, err := reg.Resolve(target.Ref{Suite: "api", Name: name, Opts: target.Options{Seed: seed}})
			if err != nil {
				t.Fatal(err)
			}
			started, err := k.Start(context.Background(), ref)
			if err != nil {
				t.Fatalf("%s cannot start: %v", name, err)
			}
			defer func() { _ = started.Stop() }()
			run := func() verdict.Result {
				for _, res := range runner.Run(k.Key(), started.Register, runner.Options{Rules: []string{"API-1.2"}}) {
					if res.Rule == "API-1.2" {
						return res
					}
				}
				t.Fatal("no result for API-1.2")
				return verdict.Result{}
			}
			res := run()
			line := firstLine(res)
			t.Logf("API-1.2: %s: %s", res.Verdict, line)
			if !k.Mutant {
				if res.Verdict != verdict.Pass {
					t.Errorf("reference %s: API-1.2 is %s, want pass: %s", name, res.Verdict, res.Reason)
				}
				return
			}
			if res.Verdict != verdict.Fail {
				t.Fatalf("API-1.2 is %s, want fail: %s", res.Verdict, res.Reason)
			}
			if want := `repeat with header "idempotency-key": must be a repeat (409), got 400`; !strings.HasPrefix(line, want) {
				t.Errorf("the first line does not start %q: %s", want, line)
			}
			if n := len([]rune(line)); n >= 200 {
				t.Errorf("the first line is %d characters, want under 200: %s", n, line)
			}
			if again := firstLine(run()); unsalted(again) != unsalted(line) {
				t.Errorf("the seed did not replay the failure:\n%s\n%s", line, again)
			}
		})
	}
}
