package main

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/onceproof/tck/adapters/broker/rabbitmq"
	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/tlsmat"
	"github.com/onceproof/tck/internal/tlsmat/tlstest"
	"github.com/onceproof/tck/internal/verdict"
)

// rabbitTLS starts a rabbitmq-server of the test's own whose AMQP listener
// takes TLS only, with the PKI's server certificate, verifying peers
// (verify_peer, fail_if_no_peer_cert); it returns the amqps:// URL and its
// password, and the management API's https URL. Skipped, saying why,
// without a rabbitmq-server.
func rabbitTLS(t *testing.T, p *tlstest.PKI) (string, string, string) {
	t.Helper()
	if !rabbitmq.HaveServerBinary() {
		if os.Getenv("TCK_REQUIRE_RABBITMQ") == "1" {
			t.Fatalf("TCK_REQUIRE_RABBITMQ=1 but %s is not on PATH", rabbitmq.ServerBinary)
		}
		t.Skipf("no %s on PATH (install rabbitmq-server)", rabbitmq.ServerBinary)
	}
	client, err := tlsmat.Material{CA: p.CA, Cert: p.ClientCert, Key: p.ClientKey}.Config()
	if err != nil {
		t.Fatal(err)
	}
	s, err := rabbitmq.StartTLSServer(context.Background(), rabbitmq.ServerTLS{CA: p.CA, Cert: p.ServerCert, Key: p.ServerKey, VerifyPeer: true, Management: true}, client)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	if u.Scheme != "amqps" || pw == "" {
		t.Fatalf("the TLS server's URL is not amqps:// with a password")
	}
	if !strings.HasPrefix(s.Management, "https://") {
		t.Fatalf("the TLS server's management API is not https: %q", s.Management)
	}
	return s.URL, pw, s.Management
}

// TestTLSRabbitMQAMQPS: broker/rabbitmq=amqps://... with --tls-ca and a
// client certificate passes BR-2.3 (a crashed member's delivery goes to
// another: consumers over TLS) and BR-7.1 (a returned mandatory publish)
// as on a plain server; without the CA, with
// another CA's client certificate, or with a wrong password, the target
// is unavailable (exit 4, one line naming it). No output holds the
// password or the key.
func TestTLSRabbitMQAMQPS(t *testing.T) {
	t.Parallel() // see parallelTests in bin_test.go
	dir := t.TempDir()
	p := tlstest.New(t, dir, "a")
	other := tlstest.New(t, dir, "b")
	good, pw, mgmt := rabbitTLS(t, p)
	key := string(tlstest.KeyBytes(t, p.ClientKey))
	run := func(addr string, flags ...string) (int, string) {
		code, stderr, all := tckAll(t, append([]string{"run", "--suite", "broker", "--target", "broker/rabbitmq=" + addr,
			"--rule", "BR-2.3", "--rule", "BR-7.1"}, flags...)...)
		if code != reports.ExitConformant {
			t.Logf("exit %d: %s", code, strings.TrimSpace(stderr))
			requireOneLine(t, "rabbitmq over TLS", stderr)
			if !strings.Contains(stderr, "broker/rabbitmq") {
				t.Errorf("stderr does not name the target: %q", stderr)
			}
		}
		if strings.Contains(all, pw) || strings.Contains(all, key) || strings.Contains(all, "PRIVATE KEY") {
			t.Errorf("%v: the password or the key appears in an output", flags)
		}
		return code, all
	}
	mine := []string{"--tls-ca", p.CA, "--tls-cert", p.ClientCert, "--tls-key", p.ClientKey}
	if code, all := run(good, mine...); code != reports.ExitConformant || !strings.Contains(all, "2 pass") {
		t.Fatalf("with the CA: exit %d, want 0 and both rules passed:\n%s", code, all)
	}
	if code, all := run(good); code != reports.ExitUnavailable || !strings.Contains(all, "certificate signed by unknown authority") {
		t.Errorf("without the CA: exit %d, want 4 naming the unknown authority:\n%s", code, all)
	}
	if code, all := run(good, "--tls-ca", p.CA, "--tls-cert", other.ClientCert, "--tls-key", other.ClientKey); code != reports.ExitUnavailable || !strings.Contains(all, "certificate") {
		t.Errorf("a client certificate of another CA: exit %d, want 4:\n%s", code, all)
	}
	// The refusal comes as a TLS alert or a closed connection, as the
	// timing falls: either way the line speaks of the client certificate.
	if code, all := run(good, "--tls-ca", p.CA); code != reports.ExitUnavailable || !strings.Contains(all, "certificate") {
		t.Errorf("no client certificate: exit %d, want 4:\n%s", code, all)
	}
	wrong := strings.Replace(good, ":"+pw+"@", ":wrong-"+pw+"@", 1)
	if code, all := run(wrong, mine...); code != reports.ExitUnavailable || !strings.Contains(all, "refused the login") {
		t.Errorf("a wrong password: exit %d, want 4 naming the refused login:\n%s", code, all)
	}

	// BR-6.1 reads the queue's arguments through the https management
	// API with the same material: as declared it passes; a delivery limit
	// changed behind the profile fails naming it (AMQP alone cannot read
	// arguments: that verdict needs the API).
	client, err := tlsmat.Material{CA: p.CA, Cert: p.ClientCert, Key: p.ClientKey}.Config()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := amqp.DialTLS(good, client)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	declare := func(limit int) {
		t.Helper()
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		defer ch.Close()
		_, _ = ch.QueueDelete("orders", false, false, false)
		if _, err := ch.QueueDeclare("orders", true, false, false, false, amqp.Table{
			"x-queue-type": "quorum", "x-delivery-limit": limit, "x-dead-letter-exchange": "orders.dlx",
		}); err != nil {
			t.Fatal(err)
		}
	}
	certify := func() (int, verdict.Result) {
		t.Helper()
		out := t.TempDir()
		args := append([]string{"run", "--profile", "../../examples/profiles/certify-rabbitmq.yaml", "--target", "broker/rabbitmq=" + good + "?management=" + mgmt,
			"--rule", "BR-6.1", "--out", out, "--quiet"}, mine...)
		code, stdout, stderr := tck(t, args...)
		if strings.Contains(stdout+stderr, pw) || strings.Contains(stdout+stderr, key) {
			t.Error("BR-6.1 over https: the password or the key appears in the output")
		}
		rep, err := reports.Read(filepath.Join(out, reports.FileJSON))
		if err != nil {
			t.Fatalf("exit %d, %s: %v", code, stderr, err)
		}
		for _, r := range rep.Results {
			if r.Rule == "BR-6.1" {
				return code, r
			}
		}
		t.Fatal("no BR-6.1")
		return 0, verdict.Result{}
	}
	declare(5)
	if code, r := certify(); code != reports.ExitConformant || r.Verdict != verdict.Pass {
		t.Fatalf("BR-6.1 as declared over https: exit %d, %s (%s)", code, r.Verdict, r.Reason)
	}
	declare(7)
	if code, r := certify(); code != reports.ExitMustFailed || r.Verdict != verdict.Fail || !strings.Contains(r.Reason, "queue orders x-delivery-limit: declared 5, server 7") {
		t.Errorf("BR-6.1 with the limit changed, over https: exit %d, %s (%s)", code, r.Verdict, r.Reason)
	}
}
