package selftest

import (
	"testing"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/verdict"
)

// RequireMustPass fails t for every MUST rule of suite whose verdict is not
// pass (a skip for the store's pace, the figure spec.ShortOfPace, is
// logged: ES-1.17 on a store at milliseconds an append), and for every
// rule of the catalog missing from results; it logs the others. Adapter
// tests use it to say "this adapter conforms".
func RequireMustPass(t testing.TB, suite string, results []verdict.Result) {
	t.Helper()
	got := map[string]verdict.Result{}
	for _, r := range results {
		got[r.Rule] = r
	}
	for _, rule := range catalog.All(suite) {
		r, ok := got[rule.ID]
		switch {
		case !ok:
			t.Errorf("%s: no result", rule.ID)
		case rule.Level == catalog.Must && SkippedForPace(r):
			// A volume rule whose aim the store's pace put beyond its
			// budget (ES-1.17 on a store at milliseconds an append): no
			// defect of either, and the reason says how to run it.
			t.Logf("%s %s: skipped at the store's pace, accepted: %s", rule.ID, rule.Level, r.Reason)
		case rule.Level == catalog.Must && r.Verdict != verdict.Pass:
			t.Errorf("%s (MUST): %s: %s", rule.ID, r.Verdict, r.Reason)
		default:
			t.Logf("%s %s: %s %s", rule.ID, rule.Level, r.Verdict, r.Reason)
		}
	}
}
