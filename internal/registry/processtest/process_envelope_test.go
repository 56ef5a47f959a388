package processtest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner/runnertest"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/consumer"
)

// runServiceProfile is runService with a profile, as `tck run --profile`.
func runServiceProfile(t *testing.T, addr string, p *profile.Profile, rules ...string) []verdict.Result {
	t.Helper()
	return runnertest.Target(t, registry.Targets(), target.Ref{Suite: "consumer", Name: "process", Address: addr},
		func(ref *target.Ref) { ref.Opts.Profile = p }, rules...)
}

// A service reading its own event shape passes the crash rule when the
// profile maps the kit's envelope onto that shape; without the mapping (or
// the kit's reference reading the documented envelope under the mapping)
// it cannot find its fields, terminates every event, and the rules fail
// naming the lost events, never pass.
func TestServiceEnvelopeMapping(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: runs a consumer service as its own process (a few seconds)")
	}
	t.Parallel() // TestMain: the repository's root, a TMPDIR of the package's own
	// One build for the three runs (a `go run` command would link the
	// service at each start; TestServiceReferencePassesEveryRule covers
	// that path).
	svc := filepath.Join(t.TempDir(), "consumer-service")
	if out, err := exec.Command("go", "build", "-o", svc, "./examples/consumer-service/go").CombinedOutput(); err != nil {
		t.Fatalf("building the service: %v\n%s", err, out)
	}
	prof, err := profile.Load("examples/profiles/consumer-envelope.yaml")
	if err != nil {
		t.Fatal(err)
	}
	nested := "cmd:" + svc + " -envelope nested"
	rules := []string{"CO-1.1", "CO-2.2"}

	together(t, func(t *testing.T) {
		t.Run("mapped", func(t *testing.T) {
			t.Parallel()
			got, sum := runnertest.Table(runServiceProfile(t, nested, prof, rules...))
			t.Log("mapped:", sum)
			for _, id := range rules {
				if got[id] != verdict.Pass {
					t.Errorf("the nested service with the profile's envelope: %s is %s, want pass", id, got[id])
				}
			}
		})
		for _, c := range []struct {
			name, addr string
			p          *profile.Profile
		}{
			{"the nested service without the mapping", nested, nil},
			{"the reference (documented envelope) with the mapping", "cmd:" + svc, prof},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				rs := runServiceProfile(t, c.addr, c.p, rules...)
				got, sum := runnertest.Table(rs)
				t.Log(c.name+":", sum)
				for _, r := range rs {
					if r.Verdict == verdict.Skipped {
						continue
					}
					if r.Verdict != verdict.Fail || !strings.Contains(r.Reason, "terminated (+TERM)") {
						t.Errorf("%s: %s is %s (%s), want fail naming the terminated events", c.name, r.Rule, r.Verdict, r.Reason)
					}
				}
				if len(got) == 0 {
					t.Errorf("%s: no rule ran", c.name)
				}
			})
		}
	})
}

// The profile's consumer is the service only when it is the profile's one
// consumer: with several, a mapped envelope is a usage error.
func TestServiceEnvelopeMatching(t *testing.T) {
	prof, err := profile.Load("examples/profiles/consumer-envelope.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env, from, err := registry.ServiceEnvelope(prof)
	if err != nil || from != "search-notify-worker" || env.MessageID != "meta.id" || env.EventID != "header:Event-Id" {
		t.Errorf("one consumer: %+v %q %v", env, from, err)
	}
	if env, from, err := registry.ServiceEnvelope(nil); err != nil || from != "" || env != (consumer.Envelope{}) {
		t.Errorf("no profile: %+v %q %v", env, from, err)
	}
	two := *prof
	two.Consumers = append(append([]profile.Consumer(nil), prof.Consumers...), prof.Consumers[0])
	two.Consumers[1].Name, two.Consumers[1].Envelope = "other", nil
	if _, _, err := registry.ServiceEnvelope(&two); err == nil || !strings.Contains(err.Error(), "declares 2 consumers (an envelope for search-notify-worker)") {
		t.Errorf("two consumers, one mapped: %v", err)
	}
	two.Consumers[0].Envelope = nil
	if env, _, err := registry.ServiceEnvelope(&two); err != nil || env != (consumer.Envelope{}) {
		t.Errorf("two consumers, none mapped: %+v %v", env, err)
	}
}
