package kafkamutants_test

import (
	"context"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/mutants/kafkamutants"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner/runnertest"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// certify starts key through the registry, as the self-test does, and
// runs its rules (BR-6.1 only applies).
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

// TestCertification: broker/kafka-certify passes BR-6.1 (its cluster holds
// the built-in profile's topic and group as declared), and each Kafka
// certification mutant, the same cluster with one setting changed behind
// the profile, fails it naming that setting with both values.
func TestCertification(t *testing.T) {
	res := certify(t, "kafka-certify", nil)
	if r := res["BR-6.1"]; r.Verdict != verdict.Pass {
		t.Fatalf("broker/kafka-certify: BR-6.1 is %s, want pass: %s", r.Verdict, r.Reason)
	}
	only := 0
	for id, r := range res {
		if strings.Contains(r.Reason, "runs only BR-6.1") {
			only++
		}
		if id != "BR-6.1" && (r.Verdict != verdict.NotApplicable || r.Reason == "") {
			t.Errorf("broker/kafka-certify: %s is %s (%s), want not-applicable naming why", id, r.Verdict, r.Reason)
		}
	}
	if only == 0 {
		t.Error("no rule names why a certification target runs only BR-6.1")
	}
	want := map[string]string{
		"certify-retention":      "topic orders retention.ms: declared 86400000, server 3600000",
		"certify-min-isr":        "topic orders min.insync.replicas: declared 1, server 2",
		"certify-group-past-end": "group orders/billing: p0 committed 1000 > log end 0",
	}
	for _, m := range kafkamutants.Certification() {
		t.Run(m.Name, func(t *testing.T) {
			if want[m.Name] == "" {
				t.Fatalf("no expected difference for %s", m.Name)
			}
			res := certify(t, "mutant-kafka-"+m.Name, m.MustFail)
			for _, id := range m.MustFail {
				runnertest.MustFail(t, m.Name, id, res)
			}
			if r := res["BR-6.1"]; !strings.Contains(r.Reason, want[m.Name]) {
				t.Errorf("BR-6.1 %s: %s; want it to name %q", r.Verdict, r.Reason, want[m.Name])
			}
		})
	}
}
