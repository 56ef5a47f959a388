package esdriver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/eventstore/memory"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/eskit"
	"github.com/onceproof/tck/internal/poll"
)

// The test binary is its own adapter: with ESDRIVER_FAKE set it speaks the
// protocol over the in-memory reference store, misbehaving as the variable
// says ("ok": not at all).
func TestMain(m *testing.M) {
	if mode := os.Getenv("ESDRIVER_FAKE"); mode != "" {
		fakeAdapter(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func fakeAdapter(mode string) {
	db := memory.NewDB()
	var hmu sync.Mutex
	handles := map[string]es.EventStore{}
	var omu sync.Mutex
	write := func(v map[string]any) {
		b, _ := json.Marshal(v)
		omu.Lock()
		defer omu.Unlock()
		os.Stdout.Write(append(b, '\n'))
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	var wg sync.WaitGroup
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			wg.Wait()
			return
		}
		var req request
		if json.Unmarshal(line, &req) != nil {
			os.Exit(9)
		}
		wg.Add(1)
		handle := func() {
			defer wg.Done()
			id := req.ID
			switch req.Op {
			case opHello:
				write(map[string]any{"id": id, "status": "ok", "protocol": Version, "store": "fake", "sharedData": mode != "one"})
				return
			case opOpen:
				hmu.Lock()
				name := fmt.Sprintf("h%d", len(handles)+1)
				handles[name] = db.Open()
				hmu.Unlock()
				write(map[string]any{"id": id, "status": "ok", "handle": name})
				return
			}
			hmu.Lock()
			h := handles[req.Handle]
			hmu.Unlock()
			switch {
			case mode == "garbage" && req.Op == opAppend:
				fmt.Fprintln(os.Stderr, "fake: about to write garbage")
				omu.Lock()
				os.Stdout.WriteString("not json\n")
				omu.Unlock()
				return
			case mode == "exit" && req.Op == opAppend:
				fmt.Fprintln(os.Stderr, "fake: disk on fire")
				os.Exit(3)
			case mode == "dying" && req.Op == opAppend:
				// Stops reading, then exits a moment later: a request
				// written meanwhile meets a broken pipe.
				fmt.Fprintln(os.Stderr, "fake: dying slowly")
				_ = os.Stdin.Close()
				time.Sleep(300 * time.Millisecond)
				os.Exit(3)
			case mode == "stranger" && req.Op == opAppend:
				write(map[string]any{"id": id + 1000, "status": "ok"})
				return
			case mode == "status" && req.Op == opAppend:
				write(map[string]any{"id": id, "status": "maybe"})
				return
			case mode == "slow" && req.Op == opAppend:
				time.Sleep(300 * time.Millisecond)
			}
			ctx := context.Background()
			switch req.Op {
			case opClose:
				_ = h.Close()
				write(map[string]any{"id": id, "status": "ok"})
			case opAppend:
				writeErr(write, id, h.Append(ctx, fromWire(*req.Stream)))
			case opLoad:
				got, err := h.Load(ctx, *req.Aggregate, *req.From, *req.To)
				if err != nil {
					writeErr(write, id, err)
					return
				}
				ws := []*wireStream{}
				for _, s := range got {
					ws = append(ws, toWire(s))
				}
				write(map[string]any{"id": id, "status": "ok", "streams": ws})
			case opExists:
				ok, err := h.RequestIDExists(ctx, *req.Aggregate, *req.RequestID)
				if err != nil {
					writeErr(write, id, err)
					return
				}
				write(map[string]any{"id": id, "status": "ok", "exists": ok})
			}
		}
		if mode == "dying" {
			handle() // no read pending: closing stdin closes the pipe
		} else {
			go handle()
		}
	}
}

func writeErr(write func(map[string]any), id uint64, err error) {
	var dr *es.DuplicateRequestIDError
	var vc *es.VersionConflictError
	var da *es.DuplicateAggregateIDError
	switch {
	case err == nil:
		write(map[string]any{"id": id, "status": "ok"})
	case errors.As(err, &dr):
		write(map[string]any{"id": id, "status": StatusDuplicateRequestID, "aggregate": dr.Aggregate, "version": dr.Version, "requestId": dr.RequestID})
	case errors.As(err, &vc):
		write(map[string]any{"id": id, "status": StatusVersionConflict, "aggregate": vc.Aggregate, "version": vc.Version, "requestId": vc.RequestID})
	case errors.As(err, &da):
		write(map[string]any{"id": id, "status": StatusDuplicateAggregateID, "aggregate": da.Aggregate, "requestId": da.RequestID})
	case errors.Is(err, es.ErrClosed):
		write(map[string]any{"id": id, "status": StatusClosed, "message": err.Error()})
	case errors.Is(err, es.ErrInvalidArgument):
		write(map[string]any{"id": id, "status": StatusInvalidArgument, "message": err.Error()})
	default:
		write(map[string]any{"id": id, "status": StatusError, "message": err.Error()})
	}
}

func startFake(t *testing.T, mode string) *Driver {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	d, err := Start(context.Background(), Config{Args: []string{exe}, Env: map[string]string{"ESDRIVER_FAKE": mode}, StartWait: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Error(err)
		}
		for _, p := range d.procs {
			if p.cur != nil && syscall.Kill(p.cur.cmd.Process.Pid, 0) == nil {
				t.Errorf("adapter process %d still runs after Stop", p.cur.cmd.Process.Pid)
			}
		}
	})
	return d
}

var agg = es.AggregateID{Context: "ctx", Name: "Order", ID: "o-1 é", Tenant: "t"}

func st(v int, req string) es.Stream {
	return es.Stream{Aggregate: agg, Version: v, RequestID: req, CommandID: "c-" + req,
		Events: []es.Event{{Name: "E", Body: []byte{0, 0xff, '\n'}}, {Name: "Empty", Body: nil}}}
}

// Every definite answer maps to its es error with the adapter's fields;
// bytes survive; two processes share the data; handles alternate.
func TestAnswersMapToTheContractErrors(t *testing.T) {
	d := startFake(t, "ok")
	if d.Processes() != 2 {
		t.Fatalf("%d processes, want 2 (the adapter says sharedData)", d.Processes())
	}
	ctx := context.Background()
	h1, err := d.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := d.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h1.run.p == h2.run.p {
		t.Error("two handles on one process, want one on each")
	}
	// The fake keeps one memory store per process: use one handle for the
	// data checks.
	if err := h1.Append(ctx, st(1, "r1")); err != nil {
		t.Fatal(err)
	}
	var da *es.DuplicateAggregateIDError
	if err := h1.Append(ctx, st(1, "r2")); !errors.As(err, &da) || da.Aggregate != agg || da.RequestID != "r2" {
		t.Errorf("second create: %v", err)
	}
	var dr *es.DuplicateRequestIDError
	if err := h1.Append(ctx, st(2, "r1")); !errors.As(err, &dr) || dr.Version != 2 || dr.RequestID != "r1" || !errors.Is(err, es.ErrConflict) {
		t.Errorf("duplicate request: %v", err)
	}
	var vc *es.VersionConflictError
	if err := h1.Append(ctx, st(3, "r3")); !errors.As(err, &vc) || vc.Version != 3 {
		t.Errorf("gap: %v", err)
	}
	if err := h1.Append(ctx, es.Stream{Aggregate: agg, Version: 2, RequestID: "x"}); !errors.Is(err, es.ErrInvalidArgument) {
		t.Errorf("no events: %v", err)
	}
	got, err := h1.Load(ctx, agg, 1, eskit.MaxVersion)
	if err != nil || len(got) != 1 || got[0].Aggregate != agg || string(got[0].Events[0].Body) != "\x00\xff\n" || len(got[0].Events[1].Body) != 0 {
		t.Errorf("load: %+v %v", got, err)
	}
	if ok, err := h1.RequestIDExists(ctx, agg, "r1"); !ok || err != nil {
		t.Errorf("exists r1: %v %v", ok, err)
	}
	if err := h1.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := h1.Load(ctx, agg, 1, 2); !errors.Is(err, es.ErrClosed) {
		t.Errorf("load after close: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := h2.Append(cancelled, st(1, "c")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if n := d.Problems(); n != 0 {
		t.Errorf("%d protocol problems, want none: %v", n, d.ProblemsSince(0))
	}
}

// Many requests are in flight at once on one process: eight slow appends
// take about one append's time, not eight.
func TestRequestsAreInFlightAtOnce(t *testing.T) {
	d := startFake(t, "slow")
	ctx := context.Background()
	h, err := d.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := st(1, fmt.Sprint(i))
			s.Aggregate.ID += fmt.Sprint(i)
			if err := h.Append(ctx, s); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("8 appends of 300 ms took %s: not in flight at once", took)
	}
}

// A protocol problem fails the call with a ProtocolError (never a
// conflict), is recorded with the adapter's last output, and the next Open
// restarts the process.
func TestProtocolProblems(t *testing.T) {
	for _, c := range []struct{ mode, want, output string }{
		{"garbage", "not a JSON reply", "about to write garbage"},
		{"exit", "exited (exit status 3)", "disk on fire"},
		{"stranger", "never sent", ""},
		{"status", `status "maybe"`, ""},
	} {
		t.Run(c.mode, func(t *testing.T) {
			d := startFake(t, c.mode)
			ctx := context.Background()
			h, err := d.Open(ctx)
			if err != nil {
				t.Fatal(err)
			}
			err = h.Append(ctx, st(1, "r"))
			var pe *ProtocolError
			if !errors.As(err, &pe) || errors.Is(err, es.ErrConflict) {
				t.Fatalf("append: %T %v, want a *ProtocolError", err, err)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.output) {
				t.Errorf("append: %v, want it to name %q and hold %q", err, c.want, c.output)
			}
			if d.Problems() != 1 {
				t.Errorf("%d problems recorded, want 1: %v", d.Problems(), d.ProblemsSince(0))
			}
			// The handle's process is gone; opening on it again restarts it.
			d.next.Store(0)
			h2, err := d.Open(ctx)
			if err != nil {
				t.Fatalf("open after the problem: %v", err)
			}
			if _, err := h2.Load(ctx, agg, 1, 1); err != nil {
				t.Errorf("load on the restarted process: %v", err)
			}
		})
	}
}

// A request that meets a broken pipe while the adapter is exiting names
// the exit and the adapter's last words, not the pipe.
func TestBrokenPipeNamesTheExit(t *testing.T) {
	d := startFake(t, "dying")
	ctx := context.Background()
	h, err := d.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() { first <- h.Append(ctx, st(1, "r")) }()
	// The fake has closed its stdin once it says so on stderr.
	wait, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := poll.Until(wait, 5*time.Millisecond, 50*time.Millisecond, func() error {
		if !strings.Contains(d.procs[0].ring.render(1500), "dying slowly") {
			return errors.New("the fake never began to die")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{h.Append(ctx, st(2, "s")), <-first} {
		var pe *ProtocolError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "exited (exit status 3)") || !strings.Contains(err.Error(), "dying slowly") {
			t.Errorf("append: %v, want a *ProtocolError naming the exit and the last output", err)
		}
	}
}

// An adapter that does not share its data runs as one process.
func TestOneProcessWithoutSharedData(t *testing.T) {
	d := startFake(t, "one")
	if d.Processes() != 1 {
		t.Errorf("%d processes, want 1", d.Processes())
	}
}

// A deadline the caller set shorter than hangAfter (ES-1.16 cuts calls at
// microseconds) ends the call with the context's error and is no protocol
// problem of the adapter; its late reply is dropped.
func TestShortDeadlineIsTheCallersChoice(t *testing.T) {
	d := startFake(t, "slow") // appends of 300 ms
	h, err := d.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err = h.Append(ctx, st(1, "cut"))
	var pe *ProtocolError
	if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &pe) || errors.Is(err, es.ErrConflict) {
		t.Fatalf("append under a 10 ms deadline: %T %v, want the deadline's error, not a protocol error or a conflict", err, err)
	}
	if _, err := h.Load(context.Background(), agg, 1, 1); err != nil {
		t.Errorf("load after the cut call: %v", err)
	}
	if d.Problems() != 0 {
		t.Errorf("%d problems recorded, want none: %v", d.Problems(), d.ProblemsSince(0))
	}
}
