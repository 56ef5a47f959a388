package broker

import (
	"fmt"
	"sort"
	"strings"
	"time"
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
	for _, id := range ids {
		if p.runnable(id) {
			longest = max(longest, p.rules[id].wait(p.t.Windows, p.t.Caps))
		}
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
				if line := p.progressLine(); line != "" {
					p.t.Progress(line)
				}
			}
		}
	}()
}

// progressLine names the rules still running and the time left.
func (p *plan) progressLine() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	type waiting struct {
		id   string
		left time.Duration
	}
	var ws []waiting
	for id, ru := range p.runs {
		if ru.done {
			continue
		}
		end := ru.f.started.Add(p.rules[id].wait(p.t.Windows, p.t.Caps))
		ws = append(ws, waiting{id, max(time.Until(end), 0)})
	}
	if len(ws) == 0 {
		return ""
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].left > ws[j].left || ws[i].left == ws[j].left && ws[i].id < ws[j].id })
	var parts []string
	past := 0 // past their wait, to be judged in turn
	for _, w := range ws {
		if w.left >= time.Second {
			parts = append(parts, fmt.Sprintf("%s (%s)", w.id, w.left.Round(time.Second)))
		} else {
			past++
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%d rules past their waits, being judged", past)
	}
	line := fmt.Sprintf("waiting: %s; about %s left", strings.Join(parts, ", "), ws[0].left.Round(time.Second))
	if past > 0 {
		line += fmt.Sprintf(" (%d more past their waits)", past)
	}
	return line
}
