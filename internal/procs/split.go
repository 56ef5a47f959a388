package procs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Split splits a command line as a POSIX shell splits words: blanks
// separate them, single quotes keep everything literal, double quotes keep
// blanks (a backslash escapes ", \, $ and ` in them), a backslash outside
// quotes escapes the next character. Nothing is expanded ($VAR, globs, ~).
func Split(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\\':
			inWord = true
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			}
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("command %q: unterminated single quote", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("command %q: unterminated double quote", s)
			}
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

// BuildGoRun turns `go run [build flags] PACKAGE [args]` into a binary
// built once into dir and the argv that runs it, so that a restart does
// not pay for a build (a `go run` per restart takes seconds and leaves the
// real process a grandchild). Any other argv comes back unchanged, built
// false.
func BuildGoRun(ctx context.Context, argv []string, dir, workDir string) (out []string, built bool, err error) {
	if len(argv) < 3 || filepath.Base(argv[0]) != "go" || argv[1] != "run" {
		return argv, false, nil
	}
	i := 2
	var flags []string
	for i < len(argv) && strings.HasPrefix(argv[i], "-") {
		flags = append(flags, argv[i])
		i++
	}
	if i >= len(argv) {
		return nil, false, fmt.Errorf("%q: no package to run", strings.Join(argv, " "))
	}
	pkgs := []string{argv[i]}
	i++
	if strings.HasSuffix(pkgs[0], ".go") {
		for i < len(argv) && strings.HasSuffix(argv[i], ".go") {
			pkgs = append(pkgs, argv[i])
			i++
		}
	}
	bin := filepath.Join(dir, "service")
	bctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	args := append(append([]string{"build", "-o", bin}, flags...), pkgs...)
	if _, err := exec.LookPath("cp"); err == nil && !slices.ContainsFunc(flags, isExecFlag) {
		// go run caches the executable it links (Go 1.24 and later), go
		// build -o does not: run through -exec cp, the second build of the
		// same service (another target, another run) is a copy, not a link.
		args = append(append(append([]string{"run", "-exec", "cp"}, flags...), pkgs...), bin)
	}
	cmd := Grouped(exec.CommandContext(bctx, argv[0], args...))
	cmd.Dir = workDir
	// The build's scratch space inside dir, so that removing dir removes
	// it even when the build was killed half-way (an interrupt).
	gotmp := filepath.Join(dir, ".gotmp")
	if err := os.MkdirAll(gotmp, 0o700); err != nil {
		return nil, false, err
	}
	cmd.Env = append(os.Environ(), "GOTMPDIR="+gotmp)
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, false, fmt.Errorf("go build %s: %v: %s", strings.Join(pkgs, " "), err, strings.TrimSpace(string(b)))
	}
	return append([]string{bin}, argv[i:]...), true, nil
}

// Grouped makes cmd a helper the kit starts and owns whole (a build, an
// installer): its own process group, the parent-death signal on Linux,
// and a cancelled context kills the group (the go command's compile and
// link children too), not only the process it started.
func Grouped(cmd *exec.Cmd) *exec.Cmd {
	cmd.SysProcAttr = childAttr()
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return cmd.Process.Kill()
	}
	cmd.WaitDelay = 2 * time.Second // output pipes held by an orphan do not block Wait
	return cmd
}

func isExecFlag(f string) bool {
	return f == "-exec" || f == "--exec" || strings.HasPrefix(f, "-exec=") || strings.HasPrefix(f, "--exec=")
}
