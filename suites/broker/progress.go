package broker

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/onceproof/tck/internal/spec"
)

// Progress lines: a run whose rules wait for long (a declared 60 s window,
// a 20 s ack wait) says now and then which rules are still waiting and
// about how long is left. The waits overlap, so what is left is the
// longest remaining wait by definition of the rules still running.
const (
	progressFrom  = 10 * time.Second // a run whose longest wait is shorter says nothing
	progressEvery = 15 * time.Second
)

// reportProgress writes progress lines to t.Progress until the set
// finishes; it returns at once when no rule waits long.
func (p *plan) reportProgress(ids []string) {
	longest := time.Duration(0)
	for _, w := range p.set.Waits(ids) {
		longest = max(longest, w)
	}
	if p.t.Progress == nil || longest < progressFrom {
		return
	}
	p.progressDone = make(chan struct{})
	p.t.Progress(fmt.Sprintf("waiting at the declared durations: about %s (the longest wait by definition; the rules' waits overlap)", longest.Round(time.Second)))
	go func() {
		defer close(p.progressDone)
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for {
			select {
			case <-p.ctx.Done():
				return
			case <-tick.C:
				if line := progressLine(p.set.Running()); line != "" {
					p.t.Progress(line)
				}
			}
		}
	}()
}

// progressLine names the rules still running and the time left.
func progressLine(ws []spec.Running) string {
	if len(ws) == 0 {
		return ""
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].Left > ws[j].Left || ws[i].Left == ws[j].Left && ws[i].ID < ws[j].ID })
	var parts []string
	past := 0 // past their wait, to be judged in turn
	for _, w := range ws {
		if w.Left >= time.Second {
			parts = append(parts, fmt.Sprintf("%s (%s)", w.ID, w.Left.Round(time.Second)))
		} else {
			past++
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%d rules past their waits, being judged", past)
	}
	line := fmt.Sprintf("waiting: %s; about %s left", strings.Join(parts, ", "), ws[0].Left.Round(time.Second))
	if past > 0 {
		line += fmt.Sprintf(" (%d more past their waits)", past)
	}
	return line
}
