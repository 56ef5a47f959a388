package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/reports"
)

const hostileHead = "schema: onceproof.profile/v1\nname: h\n"

const hostileBroker = `brokers:
  - name: b
    kind: nats
    streams:
      - name: S
        consumers:
          - name: c
            MAXDELIVER
consumers:
  - name: w
    broker: b
    stream: S
    brokerConsumer: c
    scopes: [{name: I, effect: not-idempotent}]
    ackOrder: effect-then-ack
    dedupe: {key: [messageId], lifetime: 10m, store: durable}
`

func aliasBomb(width int) string {
	var b strings.Builder
	b.WriteString(hostileHead + "description: &a0 x\n")
	for l := 1; l <= 3; l++ {
		fmt.Fprintf(&b, "x%d: &a%d [", l, l)
		for i := 0; i < width; i++ {
			fmt.Fprintf(&b, "*a%d,", l-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// TestHostileProfiles: each odd profile of issue 21 (inputs 1, 2, 3 and
// 12) gives one line and its exit code within 2 s and 200 MB, and a
// refused one writes nothing.
func TestHostileProfiles(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		code       int
		want       string // on stderr for exit 3, on stdout otherwise
	}{
		{"alias bomb 5 KB", aliasBomb(300), reports.ExitUsage, "aliases expand to more than 100000 nodes"},
		{"alias bomb 1.7 KB", aliasBomb(100), reports.ExitUsage, "aliases expand to more than 100000 nodes"},
		{"maxDeliver int64", hostileHead + strings.Replace(hostileBroker, "MAXDELIVER", "maxDeliver: 9223372036854775807", 1), reports.ExitUsage, "maxDeliver: 9223372036854775807 is above 2147483647"},
		{"maxDeliver past int64", hostileHead + strings.Replace(hostileBroker, "MAXDELIVER", "maxDeliver: 9223372036854775808", 1), reports.ExitUsage, "maxDeliver: 9223372036854775808 is out of range: a whole number from -9223372036854775808 to 9223372036854775807"},
		{"maxDeliver below int64", hostileHead + strings.Replace(hostileBroker, "MAXDELIVER", "maxDeliver: -9223372036854775809", 1), reports.ExitUsage, "maxDeliver: -9223372036854775809 is out of range"},
		{"maxDeliver 0x10", hostileHead + strings.Replace(hostileBroker, "MAXDELIVER", "maxDeliver: 0x10", 1), reports.ExitMustFailed, "maxDeliver 16"},
		{"maxDeliver 100000", hostileHead + strings.Replace(hostileBroker, "MAXDELIVER", "maxDeliver: 100000", 1), reports.ExitMustFailed, "record-shorter-than-redelivery"},
		{"backoff 1000000h", hostileHead + strings.Replace(hostileBroker, "MAXDELIVER", "maxDeliver: 4\n            backoff: [1000000h]", 1), reports.ExitMustFailed, "more than 2562047h0m0s"},
		{"backoff 2562047h twice", hostileHead + strings.Replace(hostileBroker, "MAXDELIVER", "maxDeliver: 3\n            backoff: [2562047h, 2562047h]", 1), reports.ExitMustFailed, "record-shorter-than-redelivery"},
		{"second document", hostileHead + "---\nname: other\n", reports.ExitUsage, "a second YAML document"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			prof, out := filepath.Join(dir, "p.yaml"), filepath.Join(dir, "out")
			os.WriteFile(prof, []byte(c.yaml), 0o644)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			code, stdout, stderr := tck(t, "plan", "--profile", prof, "--out", out)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("exit %d in %s, %.1f MB allocated", code, took.Round(time.Millisecond), float64(alloc)/(1<<20))
			if took > 2*time.Second || alloc > 200<<20 {
				t.Errorf("took %s and %d MB", took, alloc>>20)
			}
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, c.code, stderr)
			}
			if c.code == reports.ExitUsage {
				if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "p.yaml:") || stdout != "" {
					t.Errorf("stdout %q, stderr %q: want one line naming p.yaml:LINE and %q", stdout, stderr, c.want)
				}
				if _, err := os.Stat(out); err == nil {
					t.Errorf("a refused profile wrote %s", out)
				}
				return
			}
			if !strings.Contains(stdout, c.want) || strings.Contains(stdout, "-2") || len(stdout) > 20000 {
				t.Errorf("stdout (%d bytes) lacks %q or shows a negative duration:\n%s", len(stdout), c.want, stdout)
			}
			if fi, err := os.Stat(filepath.Join(out, reports.FileHTML)); err != nil || fi.Size() > 1<<20 {
				t.Errorf("report.html: %v", err)
			}
		})
	}
}
