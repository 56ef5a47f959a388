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
// re-run as the CLI) with SIGSTOP for 6 s, 0.8 s and 1.6 s after its first
// measurement began (a delivery awaiting its ack on the server), against a correct nats-server in this process (which is
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
	for _, at := range []time.Duration{800 * time.Millisecond, 1600 * time.Millisecond} {
		t.Run(at.String(), func(t *testing.T) {
			t.Parallel()
			pausedRun(t, at, 6*time.Second)
		})
	}
}

func pausedRun(t *testing.T, at, pause time.Duration) {
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
	// The moment counts from the first measurement under way, as the
	// server sees it: a delivery handed out and not yet acknowledged (the
	// redelivery rules time it from there). Not from the run's start or
	// its first stream: on a loaded host the set-up before the
	// measurements takes as long as it takes, and a pause at a fixed time
	// could land before any of them.
	deadline := time.Now().Add(60 * time.Second)
	for !measuring(srv) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no delivery of the run awaited its ack within a minute:\n%s", stderr.String())
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

// measuring says whether a rule's measurement is under way on srv: some
// consumer holds a delivery not yet acknowledged.
func measuring(srv *server.Server) bool {
	js, err := srv.Jsz(&server.JSzOptions{Accounts: true, Streams: true, Consumer: true})
	if err != nil {
		return false
	}
	for _, a := range js.AccountDetails {
		for _, st := range a.Streams {
			for _, c := range st.Consumer {
				if c != nil && c.NumAckPending > 0 {
					return true
				}
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
