package procs

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/leftovers"
)

func TestSplit(t *testing.T) {
	cases := map[string][]string{
		`go run ./examples/consumer-service/go`: {"go", "run", "./examples/consumer-service/go"},
		`python3 'a b.py'  --x "y \"z\""`:       {"python3", "a b.py", "--x", `y "z"`},
		`a\ b c`:                                {"a b", "c"},
		`''`:                                    {""},
	}
	for in, want := range cases {
		got, err := Split(in)
		if err != nil || strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("Split(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{`a 'b`, `a "b`} {
		if _, err := Split(bad); err == nil {
			t.Errorf("Split(%q) accepted", bad)
		}
	}
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// A process and the grandchild it started are gone after Kill, the output
// of each run is kept with its run number, Restart reuses the port and the
// environment, and Stop leaves nothing tracked.
func TestLifecycle(t *testing.T) {
	g := gomega.NewWithT(t)
	port, err := FreePort()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "grandchild")
	// A shell that starts a grandchild (as `go run` does), then listens.
	script := fmt.Sprintf(`echo "hello $GREETING {port}"; echo oops >&2; sleep 300 & echo $! > %s; exec python3 -c 'import socket,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", {port})); s.listen(); time.sleep(300)'`, pidFile)
	p, err := Start(context.Background(), Config{Name: "test", Command: script, Shell: true, Port: port, Env: map[string]string{"GREETING": "world"}})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	defer func() { _ = p.Stop(0) }()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g.Expect(p.WaitListening(ctx, "127.0.0.1:"+strconv.Itoa(port))).To(gomega.Succeed())
	g.Eventually(p.Tail).WithArguments(4096).Should(gomega.And(
		gomega.ContainSubstring(fmt.Sprintf("[run 1 stdout] hello world %d", port)),
		gomega.ContainSubstring("[run 1 stderr] oops")))
	var grandchild int
	g.Eventually(func() error {
		b, err := os.ReadFile(pidFile)
		if err == nil {
			grandchild, err = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		return err
	}).WithTimeout(30 * time.Second).Should(gomega.Succeed())
	first := p.Pid()
	g.Expect(p.Kill()).To(gomega.Succeed())
	g.Expect(p.Running()).To(gomega.BeFalse())
	g.Expect(p.ExitErr()).To(gomega.MatchError(gomega.ContainSubstring("killed")))
	g.Eventually(alive).WithArguments(grandchild).WithTimeout(10*time.Second).Should(gomega.BeFalse(), "the grandchild outlived the kill")
	g.Expect(alive(first)).To(gomega.BeFalse())

	g.Expect(p.Restart(ctx)).To(gomega.Succeed())
	g.Expect(p.Run()).To(gomega.Equal(2))
	killed, err := p.KillRun(1)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(killed).To(gomega.BeFalse(), "a kill meant for run 1 hit run 2")
	g.Expect(p.Running()).To(gomega.BeTrue())
	g.Expect(p.WaitListening(ctx, "127.0.0.1:"+strconv.Itoa(port))).To(gomega.Succeed())
	g.Eventually(p.Tail).WithArguments(4096).Should(gomega.ContainSubstring("[run 2 stdout] hello world"))
	second := p.Pid()
	g.Expect(p.Stop(time.Second)).To(gomega.Succeed())
	g.Expect(alive(second)).To(gomega.BeFalse())
	g.Expect(p.Restart(ctx)).To(gomega.MatchError(ErrStopped))
	for _, what := range leftovers.Pending() {
		g.Expect(what).NotTo(gomega.HavePrefix("test process"), "still tracked after Stop")
	}
}

// A process that exits before it listens is reported with its output, not
// waited on until the deadline.
func TestExitBeforeReady(t *testing.T) {
	g := gomega.NewWithT(t)
	p, err := Start(context.Background(), Config{Name: "early", Command: "sh -c 'echo bad config >&2; exit 3'"})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	defer func() { _ = p.Stop(0) }()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	addr := l.Addr().String()
	_ = l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err = p.WaitListening(ctx, addr)
	g.Expect(err).To(gomega.MatchError(gomega.And(gomega.ContainSubstring("exited before it was ready"), gomega.ContainSubstring("bad config"))))
	g.Expect(ctx.Err()).NotTo(gomega.HaveOccurred(), "waited until the deadline")
}

func TestRingIsBounded(t *testing.T) {
	g := gomega.NewWithT(t)
	p, err := Start(context.Background(), Config{Name: "chatty", Command: "sh -c 'for i in $(seq 1 50); do echo line $i; done'", Lines: 10})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	defer func() { _ = p.Stop(0) }()
	g.Eventually(p.Exited()).WithTimeout(30 * time.Second).Should(gomega.BeClosed())
	lines := p.Lines()
	g.Expect(lines).To(gomega.HaveLen(10))
	g.Expect(lines[0].Text).To(gomega.Equal("line 41"))
	g.Expect(lines[9].Text).To(gomega.Equal("line 50"))
	g.Expect(Render(lines, 60)).NotTo(gomega.ContainSubstring("line 48"))
}

func TestBuildGoRun(t *testing.T) {
	g := gomega.NewWithT(t)
	argv, built, err := BuildGoRun(context.Background(), []string{"python3", "x.py"}, t.TempDir(), "")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(built).To(gomega.BeFalse())
	g.Expect(argv).To(gomega.Equal([]string{"python3", "x.py"}))
	src := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\nimport (\"fmt\"; \"os\")\nfunc main() { fmt.Println(\"args\", os.Args[1:]) }\n"), 0o600)).To(gomega.Succeed())
	argv, built, err = BuildGoRun(context.Background(), []string{"go", "run", "main.go", "--flag", "v"}, t.TempDir(), src)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(built).To(gomega.BeTrue())
	g.Expect(argv[1:]).To(gomega.Equal([]string{"--flag", "v"}))
	p, err := Start(context.Background(), Config{Name: "built", Args: argv})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	defer func() { _ = p.Stop(0) }()
	g.Eventually(p.Exited()).WithTimeout(30 * time.Second).Should(gomega.BeClosed())
	g.Expect(p.Tail(1000)).To(gomega.ContainSubstring("args [--flag v]"))
}

// A port the kit names for a server it may restart lies below the
// kernel's ephemeral range, where outgoing connections cannot take it.
func TestFreePortBelowTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	if low <= minPort+1000 {
		t.Skipf("the ephemeral range starts at %d: no room below it, FreePort asks the kernel", low)
	}
	for range 20 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if port < minPort || port >= low {
			t.Fatalf("port %d, want one in [%d, %d)", port, minPort, low)
		}
	}
}
