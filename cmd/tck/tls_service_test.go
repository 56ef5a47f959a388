package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/tlsmat/tlstest"
)

// Issue 40: "A consumer service is checked over a TLS NATS and a TLS
// Redis." The reference Go service (examples/consumer-service/go) runs
// behind the kit's proxies, which speak TLS (CA and client certificate) to
// a nats-server and a redis-server that require it and verify clients, and
// plain text to the service on loopback. CO-1.1 (a redelivery through the
// proxy) and CO-2.1 (a kill between the effect and the ack, seen on the
// wire) pass, as over the embedded plain NATS; the ack-first mutant fails
// CO-2.2 through the TLS proxies; without the material the run is exit 4
// naming the broker.
// No output holds the password or the key.
func TestTLSConsumerServiceOverTLSNATSAndRedis(t *testing.T) {
	t.Parallel() // see parallelTests in bin_test.go
	if testing.Short() {
		t.Skip("skipped with -short: builds and runs a consumer service")
	}
	dir := t.TempDir()
	p := tlstest.New(t, dir, "a")
	key := string(tlstest.KeyBytes(t, p.ClientKey))
	svc := filepath.Join(dir, "consumer-service")
	build := exec.Command("go", "build", "-o", svc, "./examples/consumer-service/go")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the reference service: %v\n%s", err, out)
	}
	mine := []string{"--tls-ca", p.CA, "--tls-cert", p.ClientCert, "--tls-key", p.ClientKey}
	run := func(broker, secret string, flags ...string) (int, string) {
		code, stderr, all := tckAll(t, append([]string{"run", "--suite", "consumer", "--target", "consumer/process=cmd:" + svc, "--broker", broker,
			"--rule", "CO-1.1", "--rule", "CO-2.1"}, flags...)...)
		if code != reports.ExitConformant {
			t.Logf("exit %d: %s", code, strings.TrimSpace(stderr))
			requireOneLine(t, broker, stderr)
		}
		if strings.Contains(all, key) || strings.Contains(all, "PRIVATE KEY") || (secret != "" && strings.Contains(all, secret)) {
			t.Errorf("%s %v: the password or the key appears in an output", broker, flags)
		}
		return code, all
	}

	t.Run("plain", func(t *testing.T) {
		// The proxy reads a plain server's INFO and hands it on as it is.
		out := t.TempDir()
		code, stdout, stderr := tck(t, "run", "--suite", "consumer", "--target", "consumer/process=cmd:"+svc,
			"--rule", "CO-1.1", "--rule", "CO-2.1", "--out", out, "--quiet")
		if code != reports.ExitConformant || !strings.Contains(stdout, "2 pass") {
			t.Fatalf("over the embedded NATS: exit %d, want 0 and both rules passed:\n%s%s", code, stdout, stderr)
		}
	})
	t.Run("nats", func(t *testing.T) {
		nb := "broker/nats=tls://" + natsTLS(t, p, true, "")
		if code, all := run(nb, "", mine...); code != reports.ExitConformant || !strings.Contains(all, "2 pass") {
			t.Fatalf("with the material: exit %d, want 0 and both rules passed:\n%s", code, all)
		}
		if code, all := run(nb, ""); code != reports.ExitUnavailable || !strings.Contains(all, "unknown authority") {
			t.Errorf("without the material: exit %d, want 4 naming the unknown authority:\n%s", code, all)
		}
		// A service that acks before its effect is still caught through
		// the TLS proxy: it sees the ack on the wire and kills there.
		mutantRun(t, "consumer/mutant-process-go-ack-first", nb, mine)
	})
	t.Run("redis", func(t *testing.T) {
		const pw = "s3cr3t-service-redis-pw"
		rb := "broker/redis=rediss://:" + pw + "@" + redisTLS(t, p, pw) + "/0"
		if code, all := run(rb, pw, mine...); code != reports.ExitConformant || !strings.Contains(all, "2 pass") {
			t.Fatalf("with the material: exit %d, want 0 and both rules passed:\n%s", code, all)
		}
		if code, all := run(rb, pw); code != reports.ExitUnavailable || !strings.Contains(all, "unknown authority") {
			t.Errorf("without the material: exit %d, want 4 naming the unknown authority:\n%s", code, all)
		}
		mutantRun(t, "consumer/mutant-process-go-ack-first", rb, mine)
	})
}

// mutantRun runs CO-2.2 on a mutant consumer service over broker with the
// material: it must fail (exit 1).
func mutantRun(t *testing.T, mutant, broker string, flags []string) {
	t.Helper()
	out := t.TempDir()
	args := append([]string{"run", "--suite", "consumer", "--target", mutant, "--broker", broker,
		"--rule", "CO-2.2", "--out", out, "--quiet"}, flags...)
	code, stdout, stderr := tck(t, args...)
	if code != reports.ExitMustFailed || !strings.Contains(stdout, "1 fail") {
		t.Errorf("%s over %s: exit %d, want 1 and CO-2.2 failed:\n%s%s", mutant, broker, code, stdout, stderr)
	}
}
