package consumer_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/onceproof/tck/adapters/consumer/reference"
	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/mutants/comutants"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/consumer"
)

// An author's test of a consumer links no broker's server or client unless it
// imports the embedded option or names its broker: the suite package itself
// links none of them (issue 36: 78 modules before, the embedded default and
// the service channels now being packages of their own).
func TestSuiteLinksNoBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: go list of the suite's dependencies")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", "github.com/onceproof/tck/suites/consumer").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	mods := map[string]bool{}
	for _, m := range strings.Fields(string(out)) {
		mods[m] = true
	}
	for m := range mods {
		for _, heavy := range []string{"github.com/nats-io/", "github.com/twmb/franz-go", "github.com/redis/go-redis", "github.com/testcontainers/", "github.com/jackc/pgx", "github.com/docker/", "modernc.org/"} {
			if strings.HasPrefix(m, heavy) {
				t.Errorf("suites/consumer links %s", m)
			}
		}
	}
	if len(mods) > 20 {
		t.Errorf("suites/consumer links %d modules, more than 20: %v", len(mods), mods)
	}
	t.Logf("suites/consumer links %d modules", len(mods))
}

// A Target that names its own broker and passes no option gets the kit's
// de-dupe store in memory (no SQLite linked): the reference still passes
// CO-1.5, and a consumer that reads its record, does the effect, then
// writes the record still fails it, as it does on the SQLite store.
func TestOwnBrokerWithoutOptionKeepsTheStoreRules(t *testing.T) {
	broker := sharedNATS(t)
	var ctw reference.Design
	for _, m := range comutants.All() {
		if m.Name == "check-then-write" {
			ctw = m.Build.Design
		}
	}
	for _, c := range []struct {
		name string
		d    reference.Design
		want verdict.Verdict
	}{{"reference", reference.Reference(), verdict.Pass}, {"check-then-write", ctw, verdict.Fail}} {
		tgt := consumer.Target{Broker: broker, New: c.d.Factory(), Declared: c.d.Declared()}
		rs := runner.Run("consumer/"+c.name, func() { consumer.Register(tgt) }, runner.Options{Rules: []string{"CO-1.5"}})
		found := false
		for _, r := range rs {
			if r.Rule == "CO-1.5" {
				found = true
				if r.Verdict != c.want {
					t.Errorf("%s CO-1.5: %s %q, want %s", c.name, r.Verdict, r.Reason, c.want)
				}
			}
		}
		if !found {
			t.Errorf("%s: no result for CO-1.5", c.name)
		}
	}
}

// Without a broker and without the embedded option, every rule is unknown
// and says what to do: never a pass on a rule that ran nothing.
func TestNoBrokerIsUnknownNamingTheOption(t *testing.T) {
	tgt := consumer.Target{New: factoryOf(func(context.Context, co.Delivery) error { return nil })}
	rs := runner.Run("consumer/no-broker", func() { consumer.Register(tgt) }, runner.Options{Rules: []string{"CO-1.1"}})
	for _, r := range rs {
		if r.Rule != "CO-1.1" {
			continue
		}
		if r.Verdict != verdict.Unknown || !strings.Contains(r.Reason, "embedded.NATS()") {
			t.Fatalf("CO-1.1 without a broker: %s %q, want unknown naming embedded.NATS()", r.Verdict, r.Reason)
		}
		return
	}
	t.Fatal("no result for CO-1.1")
}
