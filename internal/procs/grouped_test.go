package procs

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGroupedKillsTheGroup: cancelling a helper (a go build) kills what it
// started too, as the go command's compile and link steps (issue 21, input
// 10: the link step ran on for seconds after Ctrl-C).
func TestGroupedKillsTheGroup(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := Grouped(exec.CommandContext(ctx, "sh", "-c", "sleep 30 & echo $!; wait"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	grandchild, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("no pid: %q", line)
	}
	start := time.Now()
	cancel()
	_ = cmd.Wait()
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("the cancelled helper took %s to end", el)
	}
	for i := 0; i < 150 && running(grandchild); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if running(grandchild) {
		syscall.Kill(grandchild, syscall.SIGKILL)
		t.Errorf("the helper's child %d outlived the cancel", grandchild)
	}
}

// running: the process exists and is not a zombie waiting for init to
// reap it (killed is what counts).
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
