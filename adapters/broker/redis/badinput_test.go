package redis_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/onceproof/tck/adapters/broker/redis"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/target"
)

const secret = "s3cret-Pw-not-shown"

// start starts key=url through the registry, as `tck run` does, and
// returns the error it must give.
func startErr(t *testing.T, key, url string) error {
	t.Helper()
	ref, err := target.Parse(key + "=" + url)
	if err != nil {
		t.Fatal(err)
	}
	k, ref, err := registry.Targets().Resolve(ref)
	if err != nil {
		t.Fatal(err)
	}
	st, err := k.Start(context.Background(), ref)
	if err == nil {
		_ = st.Stop()
		t.Fatalf("%s started; want it refused", target.Redact(url))
	}
	return err
}

// checkRefusal: unavailable (exit 4), one line naming the target and want,
// no password.
func checkRefusal(t *testing.T, err error, want string) {
	t.Helper()
	msg := err.Error()
	t.Logf("refused: %s", msg)
	if !errors.Is(err, target.ErrUnavailable) {
		t.Errorf("not target.ErrUnavailable (exit 4): %v", err)
	}
	if strings.Contains(msg, "\n") || strings.Contains(msg, secret) {
		t.Errorf("not one redacted line: %q", msg)
	}
	if !strings.Contains(msg, "broker/redis") || !strings.Contains(msg, want) {
		t.Errorf("%q does not name the target and %q", msg, want)
	}
}

func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now
	checkRefusal(t, startErr(t, "broker/redis", "redis://tck:"+secret+"@"+addr+"/0"), "cannot reach Redis at "+addr)
}

// A wrong password is refused as a login, the password never shown.
func TestWrongPassword(t *testing.T) {
	o, err := goredis.ParseURL(serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	checkRefusal(t, startErr(t, "broker/redis", "redis://default:"+secret+"@"+o.Addr+"/0"), "refused the login")
}

// With no address, no TCK_REDIS_URL and no redis-server on PATH, a Redis
// target is unavailable, naming the variable.
func TestNoAddress(t *testing.T) {
	t.Setenv(registry.RedisURLEnv, "")
	t.Setenv("PATH", t.TempDir())
	k, ref, err := registry.Targets().Resolve(target.Ref{Suite: "broker", Name: "mutant-redis-ack-unsent"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = k.Start(context.Background(), ref)
	if err == nil || !errors.Is(err, target.ErrUnavailable) || !strings.Contains(err.Error(), registry.RedisURLEnv) {
		t.Fatalf("a Redis mutant without %s: %v; want unavailable naming the variable", registry.RedisURLEnv, err)
	}
}

// An ACL user that may not create consumer groups (or add entries) on the
// kit's keys is refused at the start, the command named.
func TestACLForbids(t *testing.T) {
	url := serverURL(t)
	ctx := context.Background()
	o, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	admin := goredis.NewClient(o)
	defer admin.Close()
	for _, c := range []struct{ deny, want string }{{"-xgroup", "forbids XGROUP CREATE"}, {"-xadd", "forbids XADD"}} {
		user := "tck-acl-test-" + strings.TrimPrefix(c.deny, "-")
		if err := admin.Do(ctx, "ACL", "SETUSER", user, "reset", "on", ">"+secret, "~*", "+@all", c.deny).Err(); err != nil {
			t.Fatalf("ACL SETUSER (the test needs ACL rights on %s): %v", target.Redact(url), err)
		}
		t.Cleanup(func() { _ = admin.Do(context.Background(), "ACL", "DELUSER", user).Err() })
		u := fmt.Sprintf("redis://%s:%s@%s/%d", user, secret, o.Addr, o.DB)
		checkRefusal(t, startErr(t, "broker/redis", u), c.want)
	}
}

// A server without stream commands (XADD renamed away) is refused.
func TestNoStreamCommands(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("TCK_REQUIRE_REDIS") == "1" {
			t.Fatalf("TCK_REQUIRE_REDIS=1 but no redis-server binary: %v", err)
		}
		t.Skipf("no redis-server binary to start a server without stream commands: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir(), "--rename-command", "XADD", "", "--requirepass", secret)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := fmt.Sprintf("redis://default:%s@127.0.0.1:%d/0", secret, port)
	o, _ := goredis.ParseURL(url)
	c := goredis.NewClient(o)
	defer c.Close()
	up := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c.Ping(context.Background()).Err() == nil {
			up = true
			break
		}
	}
	if !up {
		t.Fatal("the test's own redis-server did not answer within 30s")
	}
	checkRefusal(t, startErr(t, "broker/redis", url), "has no XADD")
}

// Probe reads the server's settings and names the lossy ones.
func TestProbeReadsDurability(t *testing.T) {
	s, err := redis.Probe(context.Background(), serverURL(t), redis.NewRun(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Version == "" || s.Config["appendonly"] == "" || s.Config["appendfsync"] == "" {
		t.Errorf("probe read %+v", s)
	}
	lossy := redis.CanLoseAcked(s.Config)
	named := false
	for _, n := range s.Notes {
		named = named || strings.HasPrefix(n, "hazard: append")
	}
	if lossy != named {
		t.Errorf("settings %v: can lose acked %v, hazard named %v (%v)", s.Config, lossy, named, s.Notes)
	}
}
