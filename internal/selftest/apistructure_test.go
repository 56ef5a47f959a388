package selftest_test

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// structureRules are the api rules of issue 37 ("catch fresh defects by
// structure"): twins with structure, every replica probed, and the
// failures of the service's own store.
var structureRules = []string{"API-1.6", "API-5.2", "API-6.1"}

// firstLines are the words the first line of each issue-37 mutant's
// failure must hold: the replica that answered, or the pair.
var firstLines = map[string]string{
	"replica-lower-keys": "replica-",
	"replica-fast-clock": "replica-",
	"url-decoded-keys":   "URL twin",
	"hashcode-keys":      "hash twin",
	"like-keys":          "metacharacter twin",
	"glob-keys":          "metacharacter twin",
	"latin1-keys":        "script twin",
	// API-6.1: the failing call.
	"lookup-fails-open":       "the kit failed",
	"created-on-failed-write": "the kit failed",
	"missing-on-failed-read":  "the kit failed",
}

// TestAPIStructureRules runs API-1.6, API-5.2 and API-6.1 against both api
// references and every mutant registered to fail one of them: the
// references pass both, each mutant fails what it must, and an issue-37
// mutant's first line names the replica, the pair or the failed call (every first line is
// under 200 characters), and is the same when the rule runs again with its seed (the
// run's salt aside). API-5.1 runs on replica-fast-clock too, for the record (its
// random schedule may or may not reach the replica). TCK_API_TARGETS
// (comma-separated target names, e.g. reference,mutant-hashcode-keys)
// narrows the targets; the kill matrix runs these rules with the rest.
func TestAPIStructureRules(t *testing.T) {
	t.Parallel() // see matrixJobs
	reg := registry.Targets()
	var only []string
	if v := os.Getenv("TCK_API_TARGETS"); v != "" {
		only = strings.Split(v, ",")
	}
	for _, k := range reg.Kinds("api", true) {
		if only != nil && !slices.Contains(only, k.Name) {
			continue
		}
		var want []string
		switch {
		case k.Mutant:
			for _, id := range k.MustFail {
				if slices.Contains(structureRules, id) {
					want = append(want, id)
				}
			}
			if len(want) == 0 {
				continue
			}
		case k.Reference:
		default:
			continue
		}
		t.Run(k.Name, func(t *testing.T) {
			_, ref, err := reg.Resolve(target.Ref{Suite: k.Suite, Name: k.Name, Opts: target.Options{Seed: seed}})
			if err != nil {
				t.Fatal(err)
			}
			started, err := k.Start(context.Background(), ref)
			if err != nil {
				t.Fatalf("%s cannot start: %v", k.Name, err)
			}
			defer func() { _ = started.Stop() }()
			rules := structureRules
			if k.Mutant {
				rules = want // as the kill matrix runs a mutant: its own rules
			}
			name := strings.TrimPrefix(k.Name, "mutant-")
			record := name == "replica-fast-clock"
			if record {
				rules = append(slices.Clone(rules), "API-5.1")
			}
			got := map[string]verdict.Result{}
			for _, res := range runner.Run(k.Key(), started.Register, runner.Options{Rules: rules}) {
				got[res.Rule] = res
			}
			// The replay: the same seed, fresh ids (another salt).
			again := map[string]verdict.Result{}
			if _, ok := firstLines[name]; ok {
				for _, res := range runner.Run(k.Key(), started.Register, runner.Options{Rules: want}) {
					again[res.Rule] = res
				}
			}
			for _, id := range rules {
				res := got[id]
				line := firstLine(res)
				t.Logf("%s: %s: %s", id, res.Verdict, line)
				switch {
				case k.Mutant && slices.Contains(want, id):
					if res.Verdict != verdict.Fail {
						t.Errorf("mutant %s must fail %s, got %s: %s", name, id, res.Verdict, res.Reason)
						continue
					}
					if n := len([]rune(line)); n >= 200 {
						t.Errorf("%s on %s: the first line is %d characters, want under 200: %s", id, name, n, line)
					}
					if w, ok := firstLines[name]; ok {
						if !strings.Contains(line, w) {
							t.Errorf("%s on %s: the first line does not name %q: %s", id, name, w, line)
						}
						if a, b := unsalted(line), unsalted(firstLine(again[id])); a != b {
							t.Errorf("%s on %s: the seed did not replay the failure:\n%s\n%s", id, name, line, firstLine(again[id]))
						}
					}
				case !k.Mutant && res.Verdict != verdict.Pass:
					t.Errorf("reference %s: %s is %s, want pass: %s", k.Name, id, res.Verdict, res.Reason)
				}
			}
		})
	}
}

// seed is the seed of every run of TestAPIStructureRules: as long as a
// drawn one (53 bits), so the first lines are as long as a run's.
const seed = 1<<53 - 1

// firstLine is a reason's first line (spec's report puts numbered checks
// on lines of their own).
func firstLine(r verdict.Result) string {
	line, _, _ := strings.Cut(r.Reason, "; (")
	line, _, _ = strings.Cut(line, "\n")
	return line
}

// unsalted masks the run's salt (eight hex digits in every drawn id, their
// case folded in a mixed-case id, four of them left where the id is
// abbreviated) and what a service stamps per request (a time).
func unsalted(s string) string {
	s = regexp.MustCompile(`(?i)[0-9a-f]{4,}`).ReplaceAllString(s, "#")
	// How long after the create the repeat came is the host's pace, not the seed's.
	s = regexp.MustCompile(`[0-9.]+ s later`).ReplaceAllString(s, "# s later")
	return regexp.MustCompile(`\{"createdAt".*`).ReplaceAllString(s, "{…")
}

// TestUnsaltedMasksSaltAndPace: two runs of one seed differ in their salt
// and in how long the host took between a create and its repeat (CI's two
// first lines of replica-fast-clock); a different failure stays different.
func TestUnsaltedMasksSaltAndPace(t *testing.T) {
	a := `id "Tck-Z3WQLWEc5d7919-MiXeD" created on replica-1, repeated 0.8 s later on replica-2: must get 409, got 201 {"createdAt":"2026-12-07T00:04:13.37…`
	b := `id "Tck-Z3WQLW1c065ef7-MiXeD" created on replica-1, repeated 0.6 s later on replica-2: must get 409, got 201 {"createdAt":"2026-12-07T00:04:16.29…`
	if unsalted(a) != unsalted(b) {
		t.Errorf("one failure, two masks:\n%s\n%s", unsalted(a), unsalted(b))
	}
	c := strings.Replace(b, "replica-2", "replica-3", 1)
	if unsalted(a) == unsalted(c) {
		t.Errorf("another replica masked away: %s", unsalted(c))
	}
}
