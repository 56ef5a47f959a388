package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMakeBuildStampsTheCommit builds the binary the README's first lines
// build (`make build`) and runs it: `tck version` names the commit, and an
// exit code other than 1 reaches the shell (which `go run` would not pass).
func TestMakeBuildStampsTheCommit(t *testing.T) {
	for _, tool := range []string{"make", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	describe, err := exec.Command("git", "-C", root, "describe", "--always", "--dirty").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	short, _ := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	bin := filepath.Join(t.TempDir(), "tck")
	if out, err := exec.Command("make", "-s", "-C", root, "build", "TCK_BIN="+bin).CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "onceproof tck " + strings.TrimSpace(string(describe)) + "\n"
	if string(out) != want || !strings.Contains(string(out), strings.TrimSpace(string(short))) {
		t.Errorf("tck version printed %q, want %q (the commit %s)", out, want, strings.TrimSpace(string(short)))
	}
	cmd := exec.Command(bin, "run", "--target", "nosuch/x")
	cmd.Dir = t.TempDir()
	stderr, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("./bin/tck run --target nosuch/x: %v, want exit status 3\n%s", err, stderr)
	}
}

// TestDocsShowTheBinary: every command in README and docs/ is `tck ...`;
// `go run ./cmd/tck` appears only in prose that explains why not (it
// turns every non-zero exit into 1), never in a command block.
func TestDocsShowTheBinary(t *testing.T) {
	root := filepath.Join("..", "..")
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, filepath.Join(root, "README.md"))
	goRun := regexp.MustCompile(`go run (\./)?cmd/tck|go run github\.com/onceproof/tck/cmd/tck`)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fenced := false
		for i, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
				continue
			}
			block := fenced || strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t")
			if block && goRun.MatchString(line) {
				t.Errorf("%s:%d: a command block runs the kit with go run (its exit codes never reach a script; write tck ...): %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
	readme, _ := os.ReadFile(filepath.Join(root, "README.md"))
	first := string(readme)
	if i := strings.Index(first, "```sh\n"); i >= 0 {
		first = first[i:]
	}
	if !strings.HasPrefix(first, "```sh\nmake build ") {
		t.Errorf("README's first command block does not start with make build")
	}
}
