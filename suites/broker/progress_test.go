package broker

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/mq"
)

// TestProgress: a run with a long wait announces it and then names the
// rules still waiting with the time left, the ones past their waits
// counted; a run of short waits says nothing.
func TestProgress(t *testing.T) {
	line := progressLine([]spec.Running{{ID: "BR-1.1"}, {ID: "BR-1.2", Left: 45 * time.Second}})
	if !strings.HasPrefix(line, "waiting: BR-1.2 (45s); about 45s left") || !strings.Contains(line, "1 more past their waits") {
		t.Errorf("progress line %q", line)
	}
	if line := progressLine(nil); line != "" {
		t.Errorf("nothing running said %q", line)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var lines []string
	minute := func(kithooks.Windows, mq.Capabilities) time.Duration { return time.Minute }
	none := func(kithooks.Windows, mq.Capabilities) time.Duration { return 0 }
	set := func(t Target, waits map[string]func(kithooks.Windows, mq.Capabilities) time.Duration) *plan {
		p := &plan{t: target{Target: t, Broker: kithooks.Broker{Windows: kithooks.DefaultWindows()}}, set: spec.New("broker"), ctx: ctx, cancel: cancel}
		for id, w := range waits {
			p.set.Background(id, p.workload(id, w, nil))
		}
		return p
	}
	p := set(Target{Budget: 10 * time.Minute, Progress: func(l string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, l)
	}}, map[string]func(kithooks.Windows, mq.Capabilities) time.Duration{"BR-1.1": none, "BR-1.2": minute})
	p.reportProgress([]string{"BR-1.1", "BR-1.2"})
	cancel()
	<-p.progressDone
	if len(lines) != 1 || !strings.Contains(lines[0], "about 1m0s") {
		t.Errorf("announcement %q", lines)
	}

	quiet := set(Target{Budget: time.Minute, Progress: func(l string) { t.Errorf("a short run said %q", l) }},
		map[string]func(kithooks.Windows, mq.Capabilities) time.Duration{"BR-1.1": none})
	quiet.reportProgress([]string{"BR-1.1"})
	if quiet.progressDone != nil {
		t.Errorf("a short run started a reporter")
	}
}
