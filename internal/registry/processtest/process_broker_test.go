package processtest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	goredis "github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/adapters/broker/redis"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner/runnertest"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// runServiceOver runs a consumer/process kind over the broker target b, as
// `tck run --broker b` does.
func runServiceOver(t *testing.T, name, b string, rules ...string) []verdict.Result {
	t.Helper()
	return runnertest.Target(t, registry.Targets(), target.Ref{Suite: "consumer", Name: name},
		func(ref *target.Ref) { ref.Opts.Broker = b }, rules...)
}

// serviceRedis is the Redis server of the test: TCK_REDIS_URL, else a
// redis-server from PATH (broker/redis starts one); neither is a skip,
// or a failure with TCK_REQUIRE_REDIS=1.
func serviceRedis(t *testing.T) {
	t.Helper()
	if os.Getenv(registry.RedisURLEnv) == "" && !redis.HaveServerBinary() {
		if os.Getenv("TCK_REQUIRE_REDIS") == "1" {
			t.Fatalf("TCK_REQUIRE_REDIS=1 but %s is unset and %s is not on PATH", registry.RedisURLEnv, redis.ServerBinary)
		}
		t.Skipf("no Redis: %s is unset and %s is not on PATH (scripts/redis-local.sh starts one)", registry.RedisURLEnv, redis.ServerBinary)
	}
}

// Issue 25 item 4: the Python reference service over the team's Redis
// (--broker broker/redis) passes every rule that applies to a black box;
// the ack-before-notify mutants, Python and Go, fail CO-2.2 there too; the
// rules' stream keys are gone from the server afterwards.
func TestServiceOverRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: runs a consumer service through every consumer rule over Redis (about 90 s)")
	}
	serviceRedis(t)
	t.Parallel() // TestMain: the repository's root, a TMPDIR of the package's own

	together(t, func(t *testing.T) {
		t.Run("reference", func(t *testing.T) {
			t.Parallel()
			got, sum := runnertest.Table(runServiceOver(t, "process-python", "broker/redis"))
			t.Log(sum)
			for id, v := range got {
				want := verdict.Pass
				if id == "CO-3.1" || id == "CO-4.1" || id == "CO-2.6" {
					want = verdict.NotApplicable
				}
				if v != want {
					t.Errorf("Python reference over Redis: %s is %s, want %s", id, v, want)
				}
			}
			if len(got) < 15 {
				t.Errorf("%d rules ran, want every consumer rule", len(got))
			}
		})
		ackFirstFailsOver(t, "broker/redis")
	})
	if url := os.Getenv(registry.RedisURLEnv); url != "" {
		o, err := goredis.ParseURL(url)
		if err != nil {
			t.Fatal(err)
		}
		rdb := goredis.NewClient(o)
		defer rdb.Close()
		keys, err := rdb.Keys(context.Background(), redis.KeyPrefix+"co-*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) > 0 {
			t.Errorf("stream keys left on the server: %v", keys)
		}
	}
}

// Item 3: over the team's NATS server (broker/nats=URL) the rule's stream
// and durable consumer are created there, the service reads them through
// the proxy, and they are removed at the rule's end.
func TestServiceOverNATSURL(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: runs a consumer service")
	}
	t.Parallel() // TestMain: the repository's root, a TMPDIR of the package's own
	e, err := nats.StartEmbedded(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Stop() }()

	got, sum := runnertest.Table(runServiceOver(t, "process-python", "broker/nats="+e.URL(), "CO-1.1", "CO-2.1"))
	t.Log(sum)
	for _, id := range []string{"CO-1.1", "CO-2.1"} {
		if got[id] != verdict.Pass {
			t.Errorf("Python reference over broker/nats=URL: %s is %s, want pass", id, got[id])
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := natsgo.Connect(e.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	names := js.StreamNames(ctx)
	for n := range names.Name() {
		if strings.HasPrefix(n, "CO_") {
			t.Errorf("the rule's stream %s is still on the server", n)
		}
	}
	if err := names.Err(); err != nil {
		t.Fatal(err)
	}
}

// Issue 25 item 4 over Kafka: the Python reference service over the
// embedded kfake (broker/kafka) passes the rules a black box can serve on
// Kafka (crashes re-read from the committed offset) and the ack-wait rules
// are not applicable with Kafka's reason; the ack-before-notify mutant
// fails CO-2.2 there. The service needs kafka-python (python3-kafka).
func TestServiceOverKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: runs a consumer service over kfake")
	}
	needKafkaPython(t)
	t.Parallel() // TestMain: the repository's root, a TMPDIR of the package's own
	together(t, func(t *testing.T) {
		t.Run("reference", func(t *testing.T) {
			t.Parallel()
			rules := []string{"CO-1.1", "CO-1.2", "CO-2.1", "CO-2.2"}
			got, sum := runnertest.Table(runServiceOver(t, "process-python", "broker/kafka", rules...))
			t.Log(sum)
			for _, id := range rules {
				// An undecided rule runs again (a loaded make test left CO-1.2
				// waiting out its quiet period with the service still busy).
				for run := 1; got[id] == verdict.Unknown && run < runnertest.Runs; run++ {
					again, sum := runnertest.Table(runServiceOver(t, "process-python", "broker/kafka", id))
					t.Logf("%s was unknown; run %d:\n%s", id, run+1, sum)
					got[id] = again[id]
				}
				want := verdict.Pass
				if id == "CO-1.1" {
					want = verdict.NotApplicable
				}
				if got[id] != want {
					t.Errorf("Python reference over Kafka: %s is %s, want %s", id, got[id], want)
				}
			}
		})
		ackFirstFailsOver(t, "broker/kafka")
	})
}

// A cluster at an address (broker/kafka=kafka://HOST:PORT), three brokers: the
// service reaches every node through the kit's proxy listeners.
func TestServiceOverKafkaURL(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: runs a consumer service over kfake")
	}
	needKafkaPython(t)
	t.Parallel() // TestMain: the repository's root, a TMPDIR of the package's own
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, sum := runnertest.Table(runServiceOver(t, "process-python", "broker/kafka=kafka://"+c.ListenAddrs()[0], "CO-2.1"))
	t.Log(sum)
	if got["CO-2.1"] != verdict.Pass {
		t.Errorf("Python reference over broker/kafka=kafka://HOST:PORT: CO-2.1 is %s, want pass", got["CO-2.1"])
	}
}

// needKafkaPython skips without kafka-python, as the reference service
// finds it (its own path or Debian's python3-kafka), unless CI requires it
// (TCK_REQUIRE_PYTHON_KAFKA=1, set by .ci/run, which installs it).
func needKafkaPython(t *testing.T) {
	t.Helper()
	check := "import sys\ntry:\n import kafka\nexcept ImportError:\n sys.path.append('/usr/lib/python3/dist-packages')\n import kafka"
	if out, err := exec.Command("python3", "-c", check).CombinedOutput(); err != nil {
		if os.Getenv("TCK_REQUIRE_PYTHON_KAFKA") == "1" {
			t.Fatalf("TCK_REQUIRE_PYTHON_KAFKA=1 but python3 has no kafka module: %v %s", err, out)
		}
		t.Skip("python3 has no kafka module (apt-get install python3-kafka)")
	}
}

// together runs group's subtests, which call t.Parallel, side by side
// and returns once all of them are done. The runs are independent (each
// starts its service, its own process, on its own topics or streams) and
// mostly wait on the service and the rules' quiet periods.
func together(t *testing.T, group func(t *testing.T)) {
	t.Helper()
	t.Run("together", group)
}

// ackFirstFailsOver runs the two ack-first mutant services over broker,
// side by side (parallel subtests of t): each must fail CO-2.2.
func ackFirstFailsOver(t *testing.T, broker string) {
	for _, m := range []string{"mutant-process-python-ack-before-notify", "mutant-process-go-ack-first"} {
		t.Run(m, func(t *testing.T) {
			t.Parallel()
			got, sum := runnertest.Table(runServiceOver(t, m, broker, "CO-2.2"))
			t.Log(sum)
			if got["CO-2.2"] != verdict.Fail {
				t.Errorf("%s over %s: CO-2.2 is %s, want fail", m, broker, got["CO-2.2"])
			}
		})
	}
}
