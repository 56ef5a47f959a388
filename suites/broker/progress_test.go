package broker

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onceproof/tck/mq"
)

// TestProgress: a run with a long wait announces it and then names the
// rules still waiting with the time left; the finished and the judged are
// not listed; a run of short waits says nothing.
func TestProgress(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var lines []string
	p := &plan{
		t: Target{Windows: DefaultWindows(), Budget: 10 * time.Minute, Progress: func(l string) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, l)
		}},
		ctx: ctx, cancel: cancel, rules: map[string]ruleDef{}, runs: map[string]*run{},
	}
	minute := func(Windows, mq.Capabilities) time.Duration { return time.Minute }
	none := func(Windows, mq.Capabilities) time.Duration { return 0 }
	p.rules["BR-1.2"] = ruleDef{wait: minute}
	p.rules["BR-2.1"] = ruleDef{wait: minute}
	p.rules["BR-1.1"] = ruleDef{wait: none}
	now := time.Now()
	p.runs["BR-1.2"] = &run{f: &fixture{started: now.Add(-15 * time.Second)}}
	p.runs["BR-2.1"] = &run{f: &fixture{started: now}, done: true}
	p.runs["BR-1.1"] = &run{f: &fixture{started: now}}

	line := p.progressLine()
	if !strings.HasPrefix(line, "waiting: BR-1.2 (45s); about 45s left") || !strings.Contains(line, "1 more past their waits") || strings.Contains(line, "BR-2.1") {
		t.Errorf("progress line %q", line)
	}
	p.reportProgress([]string{"BR-1.1", "BR-1.2"})
	cancel()
	<-p.progressDone
	if len(lines) != 1 || !strings.Contains(lines[0], "about 1m0s") {
		t.Errorf("announcement %q", lines)
	}

	quiet := &plan{t: Target{Windows: DefaultWindows(), Budget: time.Minute, Progress: func(l string) { t.Errorf("a short run said %q", l) }},
		ctx: ctx, rules: map[string]ruleDef{"BR-1.1": {wait: none}}, runs: map[string]*run{}}
	quiet.reportProgress([]string{"BR-1.1"})
	if quiet.progressDone != nil {
		t.Errorf("a short run started a reporter")
	}
}
