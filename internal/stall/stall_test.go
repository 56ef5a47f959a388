package stall

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestHoldIsScoped(t *testing.T) {
	if Watching() {
		t.Fatal("the heartbeat runs before anyone held it")
	}
	r1 := Hold()
	r2 := Hold()
	r1()
	r1() // a second release of the same hold is a no-op
	if !Watching() {
		t.Fatal("the heartbeat stopped while a holder remained")
	}
	r2()
	if Watching() {
		t.Fatal("the heartbeat still runs after the last release")
	}
}

func TestOverAndScheduled(t *testing.T) {
	release := Hold()
	defer release()
	// An hour ago: no real pause the heartbeat sees now overlaps.
	t0 := time.Now().Add(-time.Hour)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	record(Pause{From: at(100), To: at(400), Len: 300 * time.Millisecond})
	record(Pause{From: at(1000), To: at(1050), Len: 50 * time.Millisecond})

	s := Over(at(0), at(2000))
	if s.Count != 2 || s.Total != 350*time.Millisecond || s.Longest.Len != 300*time.Millisecond {
		t.Fatalf("Over = %+v", s)
	}
	if got := Over(at(450), at(900)); got.Paused() {
		t.Fatalf("a pause outside the interval counted: %+v", got)
	}
	if got := Over(at(300), at(350)); got.Count != 1 {
		t.Fatalf("a pause that covers the interval did not count: %+v", got)
	}
	if got, want := Scheduled(at(0), at(2000)), 1650*time.Millisecond; got != want {
		t.Fatalf("Scheduled = %s, want %s", got, want)
	}
	if got, want := Scheduled(at(200), at(300)), time.Duration(0); got != want {
		t.Fatalf("Scheduled inside a pause = %s, want %s", got, want)
	}
	if got := s.String(); !strings.Contains(got, "not scheduled for 300 ms") || !strings.Contains(got, "2 pauses") {
		t.Fatalf("String = %q", got)
	}
}

// TestSeesSIGSTOP stops a child of its own (this test binary, re-run) for
// a second and checks the child's heartbeat saw the pause.
func TestSeesSIGSTOP(t *testing.T) {
	if os.Getenv("STALL_CHILD") == "1" {
		child()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSeesSIGSTOP$")
	cmd.Env = append(os.Environ(), "STALL_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "ready" {
		t.Fatalf("child: %q %v", sc.Text(), sc.Err())
	}
	_ = cmd.Process.Signal(syscall.SIGSTOP)
	time.Sleep(time.Second)
	_ = cmd.Process.Signal(syscall.SIGCONT)
	if !sc.Scan() {
		t.Fatalf("child said nothing after the pause: %v", sc.Err())
	}
	var ms int
	if _, err := fmt.Sscanf(sc.Text(), "longest %d", &ms); err != nil {
		t.Fatalf("child: %q", sc.Text())
	}
	if ms < 900 {
		t.Fatalf("the child was stopped for 1 s; its heartbeat saw a longest pause of %d ms", ms)
	}
	t.Logf("a 1 s SIGSTOP seen as a pause of %d ms", ms)
}

func child() {
	release := Hold()
	defer release()
	t0 := time.Now()
	time.Sleep(50 * time.Millisecond)
	fmt.Println("ready")
	// Wait until the pause has been seen (or give up after a while).
	for time.Since(t0) < 10*time.Second {
		if s := Since(t0); s.Longest.Len >= 500*time.Millisecond {
			time.Sleep(20 * time.Millisecond)
			fmt.Printf("longest %d\n", Since(t0).Longest.Len.Milliseconds())
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Printf("longest %d\n", Since(t0).Longest.Len.Milliseconds())
}

// An overloaded host: every wake-up 8 ms late, none a pause by itself; the
// lateness still adds up in Lag over the interval, and only there.
func TestLagSumsWakeUpsBelowTheFloor(t *testing.T) {
	// The record without the heartbeat goroutine, whose real wake-ups
	// would land among these.
	if Watching() {
		t.Fatal("the heartbeat runs")
	}
	t0 := time.Now().Add(-time.Hour)
	w.mu.Lock()
	w.lag, w.cum, w.since, w.last = nil, 0, t0, t0
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.lag, w.cum, w.since, w.last = nil, 0, time.Time{}, time.Time{}
		w.mu.Unlock()
	}()
	for i := 1; i <= 100; i++ {
		at := t0.Add(time.Duration(i) * (Tick + 8*time.Millisecond))
		beaten(Pause{From: at.Add(-8 * time.Millisecond), To: at, Len: 8 * time.Millisecond}, false, at)
	}
	s := Over(t0, t0.Add(100*(Tick+8*time.Millisecond)))
	if s.Paused() {
		t.Fatalf("wake-ups below the floor counted as pauses: %+v", s)
	}
	if s.Lag != 800*time.Millisecond {
		t.Fatalf("Lag = %s, want 800ms", s.Lag)
	}
	if half := Over(t0, t0.Add(50*(Tick+8*time.Millisecond))); half.Lag != 400*time.Millisecond {
		t.Fatalf("Lag over the first half = %s, want 400ms", half.Lag)
	}
	if got := s.String(); !strings.Contains(got, "800 ms late in all") {
		t.Fatalf("String = %q", got)
	}
}

// A span whose lateness, not its pauses, explains a miss says so.
func TestStringNamesTheLag(t *testing.T) {
	s := Span{Count: 8, Total: 302 * time.Millisecond, Longest: Pause{Len: 48 * time.Millisecond}, Lag: 812 * time.Millisecond}
	if got := s.String(); !strings.Contains(got, "302 ms in all") || !strings.Contains(got, "812 ms late") {
		t.Errorf("got %q", got)
	}
	s.Lag = s.Total
	if got := s.String(); strings.Contains(got, "late") {
		t.Errorf("lateness named with no more than the pauses: %q", got)
	}
}

// A pause inside a WithTimeout context moves its deadline later by the
// pause (capped at the timeout again); without one it ends on time.
func TestWithTimeoutCountsScheduledTime(t *testing.T) {
	release := Hold()
	defer release()
	start := time.Now()
	ctx, cancel := WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	d0, _ := ctx.Deadline()
	time.Sleep(350 * time.Millisecond)
	record(Pause{From: start.Add(10 * time.Millisecond), To: start.Add(310 * time.Millisecond), Len: 300 * time.Millisecond})
	d1, _ := ctx.Deadline()
	if moved := d1.Sub(d0); moved < 250*time.Millisecond || moved > 350*time.Millisecond {
		t.Fatalf("a 300 ms pause moved the deadline by %s", moved)
	}
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err = %v, want DeadlineExceeded", ctx.Err())
	}
	if time.Now().Before(d1) {
		t.Fatalf("ended %s before its moved deadline", time.Until(d1))
	}

	// A pause that never ends: the deadline moves by the timeout at most.
	start = time.Now()
	ctx2, cancel2 := WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	record(Pause{From: start, To: start.Add(time.Hour), Len: time.Hour})
	<-ctx2.Done()
	if took := time.Since(start); took < 190*time.Millisecond || took > 5*time.Second {
		t.Fatalf("a 100 ms timeout in an endless pause ended after %s, want about 200 ms", took)
	}
	ctx3, cancel3 := WithTimeout(context.Background(), time.Hour)
	cancel3()
	if !errors.Is(ctx3.Err(), context.Canceled) {
		t.Fatalf("Err after cancel = %v", ctx3.Err())
	}
}
