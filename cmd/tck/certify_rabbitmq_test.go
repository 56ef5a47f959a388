package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/onceproof/tck/adapters/broker/rabbitmq"
	"github.com/onceproof/tck/internal/poll"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/verdict"
)

// ownRabbit starts a rabbitmq-server of the test's own (loopback ports,
// the management plugin on) and returns its AMQP URL and management URL.
func ownRabbit(t *testing.T) (string, string) {
	t.Helper()
	if !rabbitmq.HaveServerBinary() {
		if os.Getenv("TCK_REQUIRE_RABBITMQ") == "1" {
			t.Fatalf("TCK_REQUIRE_RABBITMQ=1 but %s is not on PATH", rabbitmq.ServerBinary)
		}
		t.Skipf("no %s on PATH (install rabbitmq-server)", rabbitmq.ServerBinary)
	}
	// consumer_timeout at RabbitMQ's default, as a team's server has it.
	rt, err := rabbitmq.RunLocal(context.Background(), rabbitmq.WithAckWait(30*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop() })
	if rt.Management == "" {
		t.Fatal("the local server has no management API")
	}
	return rt.URL, rt.Management
}

// rabbitRun runs BR-6.1 with profile prof against the server at target
// (broker/rabbitmq=... or broker/rabbitmq) and returns the exit code and
// BR-6.1's result.
func rabbitRun(t *testing.T, prof, target string) (int, verdict.Result) {
	t.Helper()
	out := t.TempDir()
	code, _, stderr := tck(t, "run", "--profile", prof, "--target", target, "--out", out, "--quiet", "--rule", "BR-6.1")
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

// TestRunProfileRabbitMQ is issue 38's first Done-when line: the example's
// queue on a local rabbitmq-server certifies (exit 0); a queue argument, a
// policy, and the consumer timeout, each changed behind the profile, do
// not pass BR-6.1, which names the setting, the declared and the read
// value (the consumer timeout, which RabbitMQ 3.10 does not report, is
// unknown naming it: never a pass).
func TestRunProfileRabbitMQ(t *testing.T) {
	t.Parallel() // see parallelTests in bin_test.go
	url, mgmt := ownRabbit(t)
	ctx := context.Background()
	conn, err := amqp.Dial(url)
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
	declare(5)
	// The management API, as the test's own set-up (the kit only reads).
	api := func(method, path, body string) {
		t.Helper()
		u, _ := amqp.ParseURI(url)
		req, _ := http.NewRequestWithContext(ctx, method, mgmt+path, bytes.NewBufferString(body))
		req.SetBasicAuth(u.Username, u.Password)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: HTTP %d", method, path, resp.StatusCode)
		}
	}
	target := "broker/rabbitmq=" + url + "?management=" + mgmt
	prof := "../../examples/profiles/certify-rabbitmq.yaml"
	if code, r := rabbitRun(t, prof, target); code != reports.ExitConformant || r.Verdict != verdict.Pass {
		t.Fatalf("as declared: exit %d, BR-6.1 %s (%s)", code, r.Verdict, r.Reason)
	}

	// A queue argument: the queue declared again with another limit.
	declare(7)
	if code, r := rabbitRun(t, prof, target); code != reports.ExitMustFailed || r.Verdict != verdict.Fail || !strings.Contains(r.Reason, "queue orders x-delivery-limit: declared 5, server 7") {
		t.Errorf("x-delivery-limit changed: exit %d, BR-6.1 %s (%s)", code, r.Verdict, r.Reason)
	}
	declare(5)

	// A policy: a message TTL applied behind the profile.
	api(http.MethodPut, "/api/policies/%2F/ttl-behind", `{"pattern":"^orders$","definition":{"message-ttl":2000},"apply-to":"queues"}`)
	// A policy reaches the queue asynchronously: wait until the server
	// shows it (or no longer shows it).
	u, _ := amqp.ParseURI(url)
	policyShown := func(want bool) {
		t.Helper()
		if err := poll.Until(ctx, 50*time.Millisecond, 60*time.Second, func() error {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, mgmt+"/api/queues/%2F/orders", nil)
			req.SetBasicAuth(u.Username, u.Password)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			if strings.Contains(b.String(), `"policy":"ttl-behind"`) != want {
				return fmt.Errorf("policy shown: want %t", want)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	policyShown(true)
	code, r := rabbitRun(t, prof, target)
	for _, want := range []string{"queue orders x-message-ttl: declared (none), server 2000", "queue orders policy: declared (none), server ttl-behind"} {
		if code != reports.ExitMustFailed || r.Verdict != verdict.Fail || !strings.Contains(r.Reason, want) {
			t.Errorf("a policy behind the profile: exit %d, BR-6.1 %s (%s); want %q", code, r.Verdict, r.Reason, want)
		}
	}
	api(http.MethodDelete, "/api/policies/%2F/ttl-behind", "")
	policyShown(false)

	// The consumer timeout: declared 10 min; RabbitMQ 3.10 does not
	// report it, so BR-6.1 names it unreadable and does not pass.
	dir := t.TempDir()
	ct := filepath.Join(dir, "ct.yaml")
	body, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, ct, strings.Replace(string(body), "      # consumerTimeout: 30m", "      consumerTimeout: 10m", 1))
	code, r = rabbitRun(t, ct, target)
	if code != reports.ExitInconclusive || r.Verdict != verdict.Unknown || !strings.Contains(r.Reason, "consumer_timeout (not readable") {
		t.Errorf("a declared consumer timeout the server does not report: exit %d, BR-6.1 %s (%s); want it named, not passed", code, r.Verdict, r.Reason)
	}

	// The queue gone: a difference, named.
	declareGone := func() {
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		defer ch.Close()
		if _, err := ch.QueueDelete("orders", false, false, false); err != nil {
			t.Fatal(err)
		}
	}
	declareGone()
	if code, r := rabbitRun(t, prof, target); code != reports.ExitMustFailed || !strings.Contains(r.Reason, "queue orders: declared present, server not found") {
		t.Errorf("the queue gone: exit %d, BR-6.1 %s (%s)", code, r.Verdict, r.Reason)
	}
	declare(5)

	// Without the management API only a passive declare reads the queue:
	// every declared argument is named unreadable, the verdict unknown.
	noMgmt := "broker/rabbitmq=" + url + "?management=http://127.0.0.1:1"
	code, r = rabbitRun(t, prof, noMgmt)
	if code != reports.ExitInconclusive || r.Verdict != verdict.Unknown || !strings.Contains(r.Reason, "queue orders x-delivery-limit, declared 5 (not readable") {
		t.Errorf("no management API: exit %d, BR-6.1 %s (%s); want unknown naming the unreadable arguments", code, r.Verdict, r.Reason)
	}
}

// TestRunProfileEmbeddedSaysHow is issue 38's item 5: a certification run
// on a server the kit started itself says that certification reads a
// team's server and how to name one (RabbitMQ, Kafka and Redis).
func TestRunProfileEmbeddedSaysHow(t *testing.T) {
	cases := []struct{ name, prof, target, want string }{
		{"kafka", "../../examples/profiles/certify-kafka.yaml", "broker/kafka", "--target broker/kafka=kafka://HOST:PORT"},
	}
	if _, err := exec.LookPath("redis-server"); err == nil {
		// Unset, broker/redis starts a redis-server of the kit's own.
		t.Setenv(registry.RedisURLEnv, "")
		cases = append(cases, struct{ name, prof, target, want string }{"redis", "../../examples/profiles/certify-redis.yaml", "broker/redis", "--target broker/redis=redis://HOST:PORT"})
	}
	if rabbitmq.HaveServerBinary() {
		cases = append(cases, struct{ name, prof, target, want string }{"rabbitmq", "../../examples/profiles/certify-rabbitmq.yaml", "broker/rabbitmq", "--target broker/rabbitmq=amqp://USER:PASSWORD@HOST:5672/VHOST"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, r := rabbitRun(t, c.prof, c.target)
			if r.Verdict != verdict.NotApplicable || !strings.Contains(r.Reason, "reads a team's own") || !strings.Contains(r.Reason, c.want) {
				t.Errorf("exit %d, BR-6.1 %s (%s); want not-applicable saying certification reads a team's server and %q", code, r.Verdict, r.Reason, c.want)
			}
		})
	}
}

// TestPlanRabbitMQExample: tck plan --profile on the RabbitMQ example
// names every RabbitMQ hazard with its arithmetic and exits 1; the
// certification example has none.
func TestPlanRabbitMQExample(t *testing.T) {
	code, out, stderr := tck(t, "plan", "--profile", "../../examples/profiles/rabbitmq-hazards.yaml")
	if code != reports.ExitMustFailed {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	for _, want := range []string{
		"rabbitmq-delivery-limit-drops", "1 delivery + 20 redeliveries = 21 deliveries",
		"rabbitmq-consumer-timeout", "processingTime 10m0s (consumers[0].processingTime) > consumer_timeout 5m0s",
		"rabbitmq-auto-ack", "rabbitmq-no-confirms", "rabbitmq-no-mandatory",
		"rabbitmq-ttl-backlog", "= 4m0s > x-message-ttl 2s",
		"rabbitmq-maxlen-backlog", "9599 - x-max-length 1000 = 8599 messages dropped",
		"rabbitmq-stream-writers",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan does not name %q", want)
		}
	}
	if code, out, _ := tck(t, "plan", "--profile", "../../examples/profiles/certify-rabbitmq.yaml"); code != reports.ExitConformant || !strings.Contains(out, "no hazards found") {
		t.Errorf("certify-rabbitmq.yaml: exit %d\n%s", code, out)
	}
}
