package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/verdict"
)

// ownRedis starts a redis-server of the test's own on a free loopback
// port (the shared one is not reconfigured), with AOF fsync always.
func ownRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("TCK_REQUIRE_REDIS") == "1" {
			t.Fatal("TCK_REQUIRE_REDIS=1 but no redis-server on PATH")
		}
		t.Skip("no redis-server on PATH (install redis-server)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--dir", t.TempDir(),
		"--appendonly", "yes", "--appendfsync", "always", "--save", "")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	rdb := goredis.NewClient(&goredis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	defer rdb.Close()
	for i := 0; ; i++ {
		if rdb.Ping(context.Background()).Err() == nil {
			return url
		}
		if i > 100 {
			t.Fatal("redis-server did not answer")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRunProfileRedis is issue 25's second Done-when line: the declared
// stream key and group on a redis-server 7 certify (exit 0); each single
// change on the server (appendfsync, maxmemory-policy, the group gone)
// fails BR-6.1 naming it, as does each other readable setting changed
// behind the profile (appendonly, the key's TTL, its groups, the group's
// consumers); the team's keys are the same after every run.
// Issue 38 item 4: the group moved to $ with its read counter fails, without
// one is unknown naming it; an XTRIM that cut a pending entry fails.
func TestRunProfileRedis(t *testing.T) {
	t.Parallel() // see parallelTests in bin_test.go
	url := ownRedis(t)
	ctx := context.Background()
	o, _ := goredis.ParseURL(url)
	rdb := goredis.NewClient(o)
	defer rdb.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(rdb.XGroupCreateMkStream(ctx, "orders", "workers", "$").Err())
	for i := range 3 {
		must(rdb.XAdd(ctx, &goredis.XAddArgs{Stream: "orders", Values: []any{"n", i}}).Err())
	}
	must(rdb.XReadGroup(ctx, &goredis.XReadGroupArgs{Group: "workers", Consumer: "w1", Streams: []string{"orders", ">"}, Count: 1, Block: -1}).Err())
	// What the team's data is: every key, and the stream's entries,
	// groups and pending list as Redis answers.
	state := func() string {
		keys, _ := rdb.Keys(ctx, "*").Result()
		full, _ := rdb.Do(ctx, "XINFO", "STREAM", "orders", "FULL").Result()
		return fmt.Sprint(keys, full)
	}
	before := state()
	prof := filepath.Join(t.TempDir(), "redis.yaml")
	os.WriteFile(prof, []byte(`schema: onceproof.profile/v1
name: redis-certify
brokers:
  - name: cache
    kind: redis
    redis:
      appendOnly: true
      appendFsync: always
      maxmemoryPolicy: noeviction
    streams:
      - name: orders
        consumers:
          - name: workers
            redis:
              consumers: [w1]
              claimMinIdle: 2s
`), 0o644)
	run := func(rules ...string) (int, verdict.Result, *reports.Report) {
		t.Helper()
		out := t.TempDir()
		args := []string{"run", "--profile", prof, "--target", "broker/redis=" + url, "--out", out, "--quiet"}
		for _, r := range rules {
			args = append(args, "--rule", r)
		}
		code, _, stderr := tck(t, args...)
		rep, err := reports.Read(filepath.Join(out, reports.FileJSON))
		if err != nil {
			t.Fatalf("exit %d, %s: %v", code, stderr, err)
		}
		for _, r := range rep.Results {
			if r.Rule == "BR-6.1" {
				return code, r, rep
			}
		}
		t.Fatal("no BR-6.1")
		return 0, verdict.Result{}, nil
	}
	if code, r, rep := run(); code != reports.ExitConformant || r.Verdict != verdict.Pass {
		t.Fatalf("as declared: exit %d (%s), BR-6.1 %s (%s)", code, rep.Summary.Conclusion, r.Verdict, r.Reason)
	}
	if after := state(); after != before {
		t.Errorf("the run changed the team's keys:\nbefore %s\nafter  %s", before, after)
	}
	for _, c := range []struct {
		name, want   string
		change, undo func() error
	}{
		{"appendfsync", "server appendfsync: declared always, server everysec",
			func() error { return rdb.ConfigSet(ctx, "appendfsync", "everysec").Err() },
			func() error { return rdb.ConfigSet(ctx, "appendfsync", "always").Err() }},
		{"maxmemory-policy", "server maxmemory-policy: declared noeviction, server allkeys-lru",
			func() error { return rdb.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err() },
			func() error { return rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err() }},
		{"appendonly", "server appendonly: declared yes, server no",
			func() error { return rdb.ConfigSet(ctx, "appendonly", "no").Err() },
			func() error { return rdb.ConfigSet(ctx, "appendonly", "yes").Err() }},
		{"ttl", "stream key orders ttl: declared none, server",
			func() error { return rdb.Expire(ctx, "orders", time.Hour).Err() },
			func() error { return rdb.Persist(ctx, "orders").Err() }},
		{"groups", "stream key orders groups: declared workers, server audit, workers",
			func() error { return rdb.XGroupCreate(ctx, "orders", "audit", "$").Err() },
			func() error { return rdb.XGroupDestroy(ctx, "orders", "audit").Err() }},
		{"consumers", "group orders/workers consumers: declared w1, server w1, w2",
			func() error { return rdb.XGroupCreateConsumer(ctx, "orders", "workers", "w2").Err() },
			func() error { return rdb.XGroupDelConsumer(ctx, "orders", "workers", "w2").Err() }},
		{"group", "group orders/workers: declared present, server not found",
			func() error { return rdb.XGroupDestroy(ctx, "orders", "workers").Err() },
			func() error { return nil }},
	} {
		must(c.change())
		code, r, _ := run("BR-6.1")
		if code != reports.ExitMustFailed || r.Verdict != verdict.Fail || !strings.Contains(r.Reason, c.want) {
			t.Errorf("%s changed on the server: exit %d, BR-6.1 %s (%s); want exit 1 naming %q", c.name, code, r.Verdict, r.Reason, c.want)
		}
		must(c.undo())
	}
	// The group's position moved behind the profile's back (issue 38 item
	// 4). The group again, w1 reading the first entry: read counter 1.
	must(rdb.XGroupCreate(ctx, "orders", "workers", "0").Err())
	must(rdb.XReadGroup(ctx, &goredis.XReadGroupArgs{Group: "workers", Consumer: "w1", Streams: []string{"orders", ">"}, Count: 1, Block: -1}).Err())
	first, err := rdb.XRange(ctx, "orders", "-", "+").Result()
	must(err)
	back := func() error {
		return rdb.Do(ctx, "XGROUP", "SETID", "orders", "workers", first[0].ID, "ENTRIESREAD", 1).Err()
	}
	// Moved to $ keeping a read counter: positive evidence, a fail.
	must(rdb.Do(ctx, "XGROUP", "SETID", "orders", "workers", "$", "ENTRIESREAD", 1).Err())
	if code, r, _ := run("BR-6.1"); code != reports.ExitMustFailed || r.Verdict != verdict.Fail ||
		!strings.Contains(r.Reason, "the group read 1 of the 3 entries added: 2 entries were passed over without delivery") {
		t.Errorf("group moved to $ (ENTRIESREAD 1): exit %d, BR-6.1 %s (%s)", code, r.Verdict, r.Reason)
	}
	must(back())
	// Moved to $ without ENTRIESREAD: Redis drops the counter; what was
	// skipped cannot be told: unknown, naming it.
	must(rdb.XGroupSetID(ctx, "orders", "workers", "$").Err())
	if code, r, _ := run("BR-6.1"); code != reports.ExitInconclusive || r.Verdict != verdict.Unknown ||
		!strings.Contains(r.Reason, "Redis keeps no read counter for it (entries-read null") {
		t.Errorf("group moved to $ (no counter): exit %d, BR-6.1 %s (%s)", code, r.Verdict, r.Reason)
	}
	must(back())
	if code, r, _ := run("BR-6.1"); code != reports.ExitConformant || r.Verdict != verdict.Pass {
		t.Fatalf("the group set back: exit %d, BR-6.1 %s (%s)", code, r.Verdict, r.Reason)
	}
	// An XTRIM that cut a pending entry: a fail with the entry's id.
	must(rdb.XTrimMaxLen(ctx, "orders", 1).Err())
	if code, r, _ := run("BR-6.1"); code != reports.ExitMustFailed || r.Verdict != verdict.Fail ||
		!strings.Contains(r.Reason, "group orders/workers: pending entry "+first[0].ID+" is no longer in the stream (its first entry is "+first[2].ID+")") {
		t.Errorf("a trim cut the pending entry: exit %d, BR-6.1 %s (%s)", code, r.Verdict, r.Reason)
	}
}
