package selftest_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/selftest"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// TestCertificationMatrix runs the self-test on the certification kinds
// alone (broker/kafka-certify, broker/redis-certify and their mutants, the
// rest of the broker suite left out): each reference passes BR-6.1, each
// mutant fails it, and the matrix names no problem of BR-6.1's, so its
// comparisons are shown able to fail on Kafka and on Redis.
func TestCertificationMatrix(t *testing.T) {
	prefixes := []string{"kafka-certify", "mutant-kafka-certify-"}
	if _, err := exec.LookPath("redis-server"); err == nil {
		prefixes = append(prefixes, "redis-certify", "mutant-redis-certify-")
	} else {
		t.Log("no redis-server on PATH: the Redis certification kinds are left out")
	}
	reg := target.NewRegistry()
	for _, k := range registry.Targets().Kinds("broker", true) {
		for _, p := range prefixes {
			if strings.HasPrefix(k.Name, p) {
				reg.Add(k)
			}
		}
	}
	m := selftest.Run(context.Background(), reg, "broker", selftest.Options{})
	refs, mutants := 0, 0
	for _, row := range m.Rows {
		if row.Error != "" {
			t.Errorf("%s could not run: %s", row.Target, row.Error)
			continue
		}
		want := verdict.Fail
		if row.Reference {
			want = verdict.Pass
			refs++
		} else {
			mutants++
		}
		if v := row.Verdicts["BR-6.1"]; v != want {
			t.Errorf("%s: BR-6.1 is %s, want %s: %s", row.Target, v, want, row.Reasons["BR-6.1"])
		}
	}
	if refs < 1 || mutants < 2 {
		t.Errorf("the matrix has %d references and %d mutants: %+v", refs, mutants, m.Rows)
	}
	for _, p := range m.Problems() {
		// The other rules have no mutant here (they are the whole suite's).
		if strings.Contains(p, "failed by no mutant") && !strings.Contains(p, "BR-6.1 ") {
			continue
		}
		t.Errorf("self-test problem: %s", p)
	}
}
