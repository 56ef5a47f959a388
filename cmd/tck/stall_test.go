package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/stall"
	"github.com/onceproof/tck/internal/verdict"
)

// stallChild makes this test binary run the CLI with the arguments in it
// (JSON), so a test can stop a real run with SIGSTOP without building tck.
const stallChild = "TCK_STALL_CHILD_ARGS"

// TestPausedRunIsUnknown stops a `tck run --suite broker` (this test binary
// re-run as the CLI) with SIGSTOP for 6 s inside a measurement (0.8 s after
// BR-2.1's first delivery, 1.2 s after BR-1.3's first publish, as the
// server shows them), against a correct nats-server in this process (which is
// not stopped), then lets it go on: no rule may fail, the rules the pause
// hit are unknown naming it, the others pass, and the exit code is 2 when
// a MUST rule was among them (0 when only SHOULD rules were).
func TestPausedRunIsUnknown(t *testing.T) {
	if args := os.Getenv(stallChild); args != "" {
		var a []string
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			t.Fatal(err)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, a, os.Stdout, os.Stderr)
		stop()
		_ = leftovers.RemoveAll() // as main does
		os.Exit(code)
	}
	if testing.Short() {
		t.Skip("skipped with -short: two broker runs stopped for 6 s each")
	}
	// Each pause lands inside one measurement a pause must decide, placed
	// by what the server shows of it, not by the clock: 0.8 s after
	// BR-2.1's first delivery (its redelivery is due at the ack wait, 1 s,
	// and comes back late), and 1.2 s after BR-1.3's first publish (its
	// branch A retry is due at 0.8 of the window, 1.6 s, and goes out
	// late; the margin is for this process, on the same loaded host, to
	// notice the publish late). Other rules may be hit too.
	for _, c := range []struct {
		rule string
		at   time.Duration
		due  func(*server.StreamDetail) bool
	}{
		{"BR-2.1", 800 * time.Millisecond, delivered},
		{"BR-1.3", 1200 * time.Millisecond, published},
	} {
		t.Run(c.rule, func(t *testing.T) {
			t.Parallel()
			pausedRun(t, c.rule, c.due, c.at, 6*time.Second)
		})
	}
}

// delivered: a consumer of the stream holds a delivery not yet acknowledged.
func delivered(st *server.StreamDetail) bool {
	for _, c := range st.Consumer {
		if c != nil && c.NumAckPending > 0 {
			return true
		}
	}
	return false
}

// published: the stream holds a message.
func published(st *server.StreamDetail) bool { return st.State.Msgs > 0 }

func pausedRun(t *testing.T, rule string, due func(*server.StreamDetail) bool, at, pause time.Duration) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	out := filepath.Join(t.TempDir(), "report")
	args, _ := json.Marshal([]string{"run", "--quiet", "--suite", "broker", "--target", "broker/nats=" + srv.ClientURL(), "--out", out})
	cmd := exec.Command(os.Args[0], "-test.run=^TestPausedRunIsUnknown$")
	cmd.Env = append(os.Environ(), stallChild+"="+string(args))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The moment counts from the start of rule's measurement, as the
	// server sees it (due), not from the run's start or its first stream:
	// on a loaded host the set-up before a measurement takes as long as
	// it takes, and a pause at a fixed time could land outside it.
	deadline := time.Now().Add(60 * time.Second)
	for !measuring(srv, rule, due) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("%s's measurement did not start within a minute:\n%s", rule, stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(at)
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(pause)
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	rep, rerr := reports.Read(filepath.Join(out, reports.FileJSON))
	if rerr != nil {
		t.Fatalf("exit %d, no report: %v\n%s", code, rerr, stderr.String())
	}
	unknown, mustUnknown := 0, 0
	for _, r := range rep.Results {
		switch r.Verdict {
		case verdict.Pass, verdict.NotApplicable:
		case verdict.Unknown:
			unknown++
			if r.Level == "MUST" {
				mustUnknown++
			}
			// The pause, or on a loaded host the kit's lateness besides it,
			// in the stall package's wording.
			if !stall.Named(r.Reason) {
				t.Errorf("%s is unknown without naming the pause: %s", r.Rule, r.Reason)
			}
			if !hasKitHazard(r.Evidence, "not scheduled") {
				t.Errorf("%s: the pause is not a hazard of the kit's set-up: %v", r.Rule, r.Evidence.SetupHazards)
			}
		default:
			t.Errorf("%s on a correct broker, paused for %s at %s: %s: %s", r.Rule, pause, at, r.Verdict, r.Reason)
		}
	}
	if unknown == 0 {
		t.Errorf("the pause decided no rule's verdict (exit %d): it hit no measurement", code)
	}
	// Which rules the pause hits is the scheduler's: a SHOULD rule unknown
	// alone leaves the run conformant (exit 0), a MUST rule makes it
	// inconclusive (2).
	want := 0
	if mustUnknown > 0 {
		want = reports.ExitInconclusive
	}
	if code != want {
		t.Errorf("exit %d with %d MUST rules unknown, want %d", code, mustUnknown, want)
	}
	t.Logf("paused %s at %s: exit %d, %d unknown (%d MUST)", pause, at, code, unknown, mustUnknown)
}

// measuring says whether rule's measurement is under way on srv: one of
// its scratch streams (named after the rule, "br-2_1-t-<nonce>") is due.
func measuring(srv *server.Server, rule string, due func(*server.StreamDetail) bool) bool {
	js, err := srv.Jsz(&server.JSzOptions{Accounts: true, Streams: true, Consumer: true})
	if err != nil {
		return false
	}
	prefix := strings.ReplaceAll(strings.ToLower(rule), ".", "_") + "-"
	for _, a := range js.AccountDetails {
		for i := range a.Streams {
			if strings.Contains(a.Streams[i].Name, prefix) && due(&a.Streams[i]) {
				return true
			}
		}
	}
	return false
}

func hasKitHazard(ev *verdict.Evidence, text string) bool {
	if ev == nil {
		return false
	}
	for _, h := range ev.SetupHazards {
		if strings.Contains(h, text) {
			return true
		}
	}
	return false
}
