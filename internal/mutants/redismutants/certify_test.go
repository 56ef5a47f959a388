package redismutants_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/mutants/redismutants"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner/runnertest"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// certify starts key through the registry, as the self-test does (a
// redis-server of the kit's own), and runs its rules (BR-6.1 only applies).
func certify(t *testing.T, key string, mustFail []string) map[string]verdict.Result {
	t.Helper()
	k, ref, err := registry.Targets().Resolve(target.Ref{Suite: "broker", Name: key})
	if err != nil {
		t.Fatal(err)
	}
	st, err := k.Start(context.Background(), ref)
	if err != nil {
		t.Fatalf("starting %s: %v", key, err)
	}
	defer st.Stop()
	return runnertest.Killed(key, st.Register, nil, mustFail, t.Logf)
}

// TestCertification: broker/redis-certify passes BR-6.1 (its server holds
// the built-in profile's stream key, group and persistence settings as
// declared), and each Redis certification mutant, the same server with one
// setting changed behind the profile, fails it naming what changed.
func TestCertification(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("TCK_REQUIRE_REDIS") == "1" {
			t.Fatal("TCK_REQUIRE_REDIS=1 but no redis-server on PATH")
		}
		t.Skip("no redis-server on PATH: the certification targets run on a server of the kit's own")
	}
	res := certify(t, "redis-certify", nil)
	if r := res["BR-6.1"]; r.Verdict != verdict.Pass {
		t.Fatalf("broker/redis-certify: BR-6.1 is %s, want pass: %s", r.Verdict, r.Reason)
	}
	only := 0
	for id, r := range res {
		if strings.Contains(r.Reason, "runs only BR-6.1") {
			only++
		}
		if id != "BR-6.1" && (r.Verdict != verdict.NotApplicable || r.Reason == "") {
			t.Errorf("broker/redis-certify: %s is %s (%s), want not-applicable naming why", id, r.Verdict, r.Reason)
		}
	}
	if only == 0 {
		t.Error("no rule names why a certification target runs only BR-6.1")
	}
	want := map[string]string{
		"certify-maxmemory-policy": "server maxmemory-policy: declared noeviction, server allkeys-lru",
		"certify-appendfsync":      "server appendfsync: declared always, server everysec",
		"certify-group-moved":      "group orders/workers: last-delivered-id",
	}
	for _, m := range redismutants.Certification() {
		t.Run(m.Name, func(t *testing.T) {
			if want[m.Name] == "" {
				t.Fatalf("no expected difference for %s", m.Name)
			}
			res := certify(t, "mutant-redis-"+m.Name, m.MustFail)
			for _, id := range m.MustFail {
				runnertest.MustFail(t, m.Name, id, res)
			}
			if r := res["BR-6.1"]; !strings.Contains(r.Reason, want[m.Name]) {
				t.Errorf("BR-6.1 %s: %s; want it to name %q", r.Verdict, r.Reason, want[m.Name])
			}
		})
	}
}
