package reports

import (
	"fmt"
	"html/template"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/verdict"
)

// Timelines are drawn as inline SVG in the style of seed 002's two-branch
// de-dupe timeline and its crash windows: a labelled time axis, one lane per
// actor (or branch), windows as shaded spans, and outcomes told apart by
// shape, with a legend, so a duplicate the broker dropped never looks like a
// message it stored. Labels are placed so that no two overlap (the browser
// test measures them).

// shape is how one kind of outcome is drawn.
type shape string

const (
	shStored    shape = "stored"
	shDuplicate shape = "duplicate"
	shDelivered shape = "delivered"
	shRedeliver shape = "redelivered"
	shAcked     shape = "acked"
	shEffect    shape = "effect"
	shAgain     shape = "again"
	shCrash     shape = "crash"
	shLost      shape = "lost"
	shRefused   shape = "refused"
	shUnsure    shape = "indeterminate"
	shNak       shape = "nak"
	shRead      shape = "read"
	shKit       shape = "kit"
	shEnd       shape = "end"
	shOther     shape = "other"
	shMarked    shape = "marked"
)

// legendOrder is the legend's order and wording.
var legendOrder = []struct {
	s    shape
	text string
}{
	{shStored, "stored / appended"},
	{shDuplicate, "dropped as duplicate (not stored, not applied)"},
	{shAgain, "stored or done again (the hazard)"},
	{shDelivered, "delivered (attempt 1)"},
	{shRedeliver, "redelivered (attempt 2+)"},
	{shEffect, "effect done"},
	{shAcked, "acked"},
	{shNak, "nak / term"},
	{shCrash, "crash / kill"},
	{shLost, "lost (reply, ack, message or effect)"},
	{shRefused, "refused (conflict or error)"},
	{shUnsure, "outcome unknown (timeout)"},
	{shRead, "read / check"},
	{shEnd, "window ends"},
	{shKit, "kit step (set-up, fault armed)"},
	{shOther, "other"},
	{shMarked, "violating operation (labelled: which call won, its version and request id)"},
}

var (
	attemptRe       = regexp.MustCompile(`attempt[= ](\d+)`)
	laterDeliveryRe = regexp.MustCompile(`delivery [2-9]`)
	parenRe         = regexp.MustCompile(`\s*\([^)]*\)`)
)

// opShape classifies one recorded operation.
func opShape(op history.Op) shape {
	a, res := strings.ToLower(op.Action), strings.ToLower(op.Result)
	switch {
	case strings.Contains(a, "crash") || strings.Contains(a, "kill"):
		if strings.HasPrefix(a, "arm") {
			return shKit
		}
		return shCrash
	case a == "dropped" || a == "lose answer" || strings.Contains(res, "lost"):
		return shLost
	case strings.HasPrefix(a, "arm") || a == "disarm" || a == "clock" || strings.HasPrefix(a, "open") ||
		strings.HasPrefix(a, "create") || strings.HasPrefix(a, "start") || a == "reconnect" || a == "restart" || a == "watch-max-deliver":
		return shKit
	case op.Outcome == history.Fail:
		return shRefused
	case op.Outcome == history.Info || op.Outcome == "":
		return shUnsure
	case strings.HasSuffix(a, "-info") || strings.HasSuffix(a, " info"):
		return shRead
	case strings.Contains(res, "pos=") && strings.Contains(res, "duplicate") || strings.Contains(res, "as a duplicate") || res == "not applied":
		return shDuplicate
	case a == "deliver":
		if m := attemptRe.FindStringSubmatch(res); m != nil && m[1] != "1" {
			return shRedeliver
		}
		return shDelivered
	case a == "ack":
		return shAcked
	case strings.HasPrefix(a, "nak") || a == "term" || a == "in-progress":
		return shNak
	case a == "publish" || a == "append" || a == "enqueue":
		return shStored
	case a == "error":
		return shRefused
	case strings.Contains(a, "upsert") || a == "notify" || strings.Contains(a, "effect") || strings.Contains(a, "insert"):
		return shEffect
	case strings.HasPrefix(a, "read") || a == "load" || strings.HasSuffix(a, "?") || a == "max-deliver signal":
		return shRead
	}
	return shOther
}

// markShape classifies one mark of a plan hazard's timeline by its main
// clause: a parenthesis or a trailing "the ack lost" qualifies the mark, the
// words before it say what happened.
func markShape(text string) shape {
	t := strings.ToLower(parenRe.ReplaceAllString(text, ""))
	t = strings.ReplaceAll(t, ", the ack lost", "")
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(t, w) {
				return true
			}
		}
		return false
	}
	switch {
	case has("window ends", "expires"):
		return shEnd
	case has("crash"):
		return shCrash
	case has("dropped as a duplicate", "de-duped", "record found, skipped", "inside the window: dropped"):
		return shDuplicate
	case has("again", "second copy", "back at v1"):
		return shAgain
	case has("lost", "missing", "dropped", "skipped for good", "no event", "times out"):
		return shLost
	case has("refused"):
		return shRefused
	case has("acked"):
		return shAcked
	case has("done", "processed", "written", " at v"):
		return shEffect
	case has("redelivery", "replays") || laterDeliveryRe.MatchString(t):
		return shRedeliver
	case has("delivery"):
		return shDelivered
	case has("publish", "stored", "commits", "appended"):
		return shStored
	}
	return shOther
}

// drawShape writes one shape centred on (x, y), with a tooltip.
func drawShape(b *strings.Builder, s shape, x, y float64, tip string) {
	t := ""
	if tip != "" {
		// A tooltip names the operation; a long value is cut (the raw
		// history has it whole), which keeps a long timeline's page small.
		tip = strings.Join(strings.Fields(tip), " ")
		if r := []rune(tip); len(r) > maxTip {
			tip = string(r[:maxTip]) + "…"
		}
		t = "<title>" + template.HTMLEscapeString(tip) + "</title>"
	}
	f := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	switch s {
	case shStored:
		f(`<rect class="m" x="%.1f" y="%.1f" width="9" height="9" fill="#2e7d32">%s</rect>`, x-4.5, y-4.5, t)
	case shAgain:
		f(`<g class="m"><rect x="%.1f" y="%.1f" width="10" height="10" fill="#c62828" stroke="#7f0000" stroke-width="1.5"/><rect x="%.1f" y="%.1f" width="4" height="4" fill="#fff"/>%s</g>`, x-5, y-5, x-2, y-2, t)
	case shDuplicate:
		f(`<g class="m" fill="none" stroke="#546e7a" stroke-width="1.6"><circle cx="%.1f" cy="%.1f" r="5"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>%s</g>`, x, y, x-3.5, y+3.5, x+3.5, y-3.5, t)
	case shDelivered:
		f(`<path class="m" d="M%.1f %.1fL%.1f %.1fL%.1f %.1fZ" fill="#1565c0">%s</path>`, x-4, y-5, x+5, y, x-4, y+5, t)
	case shRedeliver:
		f(`<path class="m" d="M%.1f %.1fL%.1f %.1fL%.1f %.1fZ" fill="#fff" stroke="#ef6c00" stroke-width="2">%s</path>`, x-4, y-5, x+5, y, x-4, y+5, t)
	case shEffect:
		f(`<path class="m" d="M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fZ" fill="#6a1b9a">%s</path>`, x, y-5.5, x+5.5, y, x, y+5.5, x-5.5, y, t)
	case shAcked:
		f(`<path class="m" d="M%.1f %.1fL%.1f %.1fL%.1f %.1f" fill="none" stroke="#2e7d32" stroke-width="2.4">%s</path>`, x-5, y, x-1.5, y+4, x+5, y-5, t)
	case shNak:
		f(`<rect class="m" x="%.1f" y="%.1f" width="8" height="8" fill="#fff" stroke="#1565c0" stroke-width="1.6">%s</rect>`, x-4, y-4, t)
	case shCrash:
		f(`<path class="m" d="M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f" stroke="#c62828" stroke-width="2.8">%s</path>`, x-5, y-5, x+5, y+5, x-5, y+5, x+5, y-5, t)
	case shLost:
		f(`<path class="m" d="M%.1f %.1fL%.1f %.1fL%.1f %.1fZ" fill="#fff" stroke="#c62828" stroke-width="1.8" stroke-dasharray="2 1.5">%s</path>`, x-5.5, y-4.5, x+5.5, y-4.5, x, y+5.5, t)
	case shRefused:
		f(`<g class="m" fill="none" stroke="#c62828" stroke-width="1.5"><rect x="%.1f" y="%.1f" width="9" height="9"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>%s</g>`, x-4.5, y-4.5, x-4.5, y+4.5, x+4.5, y-4.5, t)
	case shUnsure:
		f(`<rect class="m" x="%.1f" y="%.1f" width="9" height="9" fill="#fff" stroke="#e0a000" stroke-width="1.8" stroke-dasharray="2 1">%s</rect>`, x-4.5, y-4.5, t)
	case shRead:
		f(`<circle class="m" cx="%.1f" cy="%.1f" r="3" fill="#fff" stroke="#888" stroke-width="1.2">%s</circle>`, x, y, t)
	case shEnd:
		f(`<line class="m" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#555" stroke-width="2.5">%s</line>`, x, y-7, x, y+7, t)
	case shKit:
		f(`<line class="m" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#9e9e9e" stroke-width="2">%s</line>`, x, y-4, x, y+4, t)
	case shMarked:
		f(`<circle class="vmr" cx="%.1f" cy="%.1f" r="8" fill="none" stroke="#d50000" stroke-width="2">%s</circle>`, x, y, t)
	default:
		f(`<circle class="m" cx="%.1f" cy="%.1f" r="2.5" fill="#777">%s</circle>`, x, y, t)
	}
}

// Text geometry. SVG labels are 11 px in a monospace face; the estimate
// errs wide, so labels placed by it do not touch in the browser.
const (
	fontPx  = 11
	charPx  = 7.0  // an ASCII cell of an 11 px monospace font is 6.6 px
	wideCh  = 12.0 // a CJK character is about one em
	rowPx   = 17.0 // vertical pitch of text rows (a CJK font's box is ~16 px)
	svgW    = 960.0
	padLeft = 8.0
)

func textWidth(s string) float64 {
	w := 0.0
	for _, r := range s {
		if unicode.Is(unicode.Han, r) || unicode.In(r, unicode.Hiragana, unicode.Katakana, unicode.Hangul) || (r >= 0xFF00 && r <= 0xFFEF) || (r >= 0x3000 && r <= 0x303F) {
			w += wideCh
		} else {
			w += charPx
		}
	}
	return w
}

// fit shortens s to at most w pixels.
func fit(s string, w float64) string {
	if textWidth(s) <= w {
		return s
	}
	rs := []rune(s)
	for len(rs) > 1 && textWidth(string(rs))+charPx > w {
		rs = rs[:len(rs)-1]
	}
	return string(rs) + "…"
}

// wrap breaks s into lines of at most w pixels, at spaces where it can.
func wrap(s string, w float64) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		try := word
		if line != "" {
			try = line + " " + word
		}
		if textWidth(try) <= w || line == "" {
			line = try
			continue
		}
		lines = append(lines, line)
		line = word
	}
	if line != "" {
		lines = append(lines, line)
	}
	for i, l := range lines {
		lines[i] = fit(l, w)
	}
	return lines
}

// rows places horizontal intervals in the first row where they fit.
type rows [][][2]float64

func (r *rows) place(x0, x1 float64) int {
	for i, row := range *r {
		free := true
		for _, iv := range row {
			if x0 < iv[1]+6 && iv[0] < x1+6 {
				free = false
				break
			}
		}
		if free {
			(*r)[i] = append(row, [2]float64{x0, x1})
			return i
		}
	}
	*r = append(*r, [][2]float64{{x0, x1}})
	return len(*r) - 1
}

func text(b *strings.Builder, x, y float64, anchor, cls, s string) {
	a := ""
	if anchor != "" && anchor != "start" {
		a = ` text-anchor="` + anchor + `"`
	}
	c := ""
	if cls != "" {
		c = ` class="` + cls + `"`
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f"%s%s>%s</text>`, x, y, a, c, template.HTMLEscapeString(s))
}

// legend draws the shapes used, wrapped to the width; it returns the height.
func legend(b *strings.Builder, used map[shape]bool, y float64) float64 {
	x := padLeft
	row := 0.0
	n := 0
	for _, l := range legendOrder {
		if !used[l.s] {
			continue
		}
		w := 16 + textWidth(l.text) + 18
		if x+w > svgW-8 && x > padLeft {
			x, row = padLeft, row+rowPx
		}
		drawShape(b, l.s, x+6, y+row-4, "")
		text(b, x+16, y+row, "", "lg", l.text)
		x += w
		n++
	}
	if n == 0 {
		return 0
	}
	return row + rowPx
}

// niceStep is a 1-2-5 step giving at least minPx between ticks.
func niceStep(span time.Duration, plotW, minPx float64) time.Duration {
	if span <= 0 {
		return 1
	}
	raw := float64(span) * minPx / plotW
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return time.Duration(m * p)
		}
	}
	return time.Duration(10 * p)
}

// window is a span drawn above the lanes.
type window struct {
	from, to time.Duration
	label    string
}

// opsWindows derives the spans the rule's figures declare (or, without a
// figure, the target's settings): a de-dupe window from each id's first
// stored publish, an ack wait from each first delivery, and the watch a rule
// keeps after its last operation ("no redelivery in 3 s").
func opsWindows(ops []history.Op, figs []verdict.Figure, cfg map[string]string) []window {
	secs := func(names ...string) time.Duration {
		for _, f := range figs {
			for _, n := range names {
				if f.Name != n || f.Unit != "s" {
					continue
				}
				switch v := f.Value.(type) {
				case float64:
					return time.Duration(v * float64(time.Second))
				case int:
					return time.Duration(v) * time.Second
				}
			}
		}
		return 0
	}
	setting := func(key string) time.Duration {
		d, _ := time.ParseDuration(cfg[key])
		return d
	}
	idOf := func(op history.Op) string {
		for _, f := range strings.Fields(op.Value) {
			if strings.HasPrefix(f, "id=") {
				return strings.TrimPrefix(f, "id=")
			}
		}
		return ""
	}
	has := func(pred func(history.Op) bool) bool {
		for _, op := range ops {
			if pred(op) {
				return true
			}
		}
		return false
	}
	var out []window
	const most = 3
	dedupe := secs("declared window", "chosen window")
	if dedupe == 0 && has(func(op history.Op) bool { return strings.Contains(op.Result, "duplicate") && op.Action == "publish" }) {
		dedupe = setting("dedupeWindow")
	}
	if dedupe > 0 {
		seen := map[string]bool{}
		for _, op := range ops {
			id := idOf(op)
			if op.Action != "publish" || id == "" || seen[id] || !strings.Contains(op.Result, "stored") {
				continue
			}
			seen[id] = true
			if len(seen) <= most {
				out = append(out, window{op.End, op.End + dedupe, "de-dupe window " + durationText(dedupe) + " of " + shortID(id)})
			}
		}
		if n := len(seen) - most; n > 0 {
			out[most-1].label += fmt.Sprintf(" (and %d more ids, not drawn)", n)
		}
	}
	ack := secs("declared ack wait")
	if ack == 0 && has(func(op history.Op) bool {
		return opShape(op) == shRedeliver && op.Actor != "" && !strings.Contains(op.Result, "attempt ")
	}) {
		ack = setting("ackWait")
	}
	if ack > 0 {
		seen := map[string]bool{}
		for _, op := range ops {
			id := idOf(op)
			if op.Action != "deliver" || seen[id] {
				continue
			}
			seen[id] = true
			if len(seen) <= most {
				label := "ack wait " + durationText(ack)
				if id != "" {
					label += " of " + shortID(id)
				}
				out = append(out, window{op.End, op.End + ack, label})
			}
		}
	}
	if w := secs("watched for"); w > 0 && len(ops) > 0 {
		last := ops[len(ops)-1]
		from := max(last.End, last.Start)
		out = append(out, window{from, from + w, "watched for " + durationText(w) + " after the last operation"})
	}
	return out
}

// shortID keeps the readable part of a kit-made id (br-1_3-branchA-1d5d... -> branchA).
func shortID(id string) string {
	parts := strings.Split(id, "-")
	if len(parts) >= 4 {
		return strings.Join(parts[2:len(parts)-1], "-")
	}
	return id
}

// maxDrawn bounds the operations drawn in a failure's timeline, and
// maxDrawnPassing in a passing rule's; the raw history keeps them all.
const (
	maxDrawn        = 400
	maxDrawnPassing = 5
	maxTip          = 110
)

// opsTimeline draws a rule's recorded history, its first limit operations.
func opsTimeline(ops []history.Op, figs []verdict.Figure, cfg map[string]string, limit int) template.HTML {
	if len(ops) == 0 {
		return ""
	}
	total := len(ops)
	truncated := len(ops) > limit
	if truncated {
		ops = ops[:limit]
	}
	var lanes []string
	lane := map[string]int{}
	var end time.Duration
	for _, op := range ops {
		if _, ok := lane[op.Actor]; !ok {
			lane[op.Actor] = len(lanes)
			lanes = append(lanes, op.Actor)
		}
		end = max(end, op.End, op.Start)
	}
	wins := opsWindows(ops, figs, cfg)
	for _, w := range wins {
		end = max(end, w.to)
	}
	if end <= 0 {
		end = time.Microsecond
	}
	labelW := 0.0
	for _, l := range lanes {
		labelW = max(labelW, textWidth(l))
	}
	left := padLeft + min(labelW, 150) + 12
	plotW := svgW - left - 24
	xOf := func(d time.Duration) float64 { return left + float64(d)/float64(end)*plotW }

	var b strings.Builder
	// Windows: spans on rows above the lanes, each label inside its span
	// or just after it, rows chosen so that no two labels meet.
	var spanRows rows
	type placedWin struct {
		w     window
		row   int
		label string
	}
	var pws []placedWin
	for _, w := range wins {
		x0, x1 := xOf(w.from), xOf(w.to)
		lab := fit(w.label, svgW-x0-12)
		row := spanRows.place(x0, max(x1, x0+4+textWidth(lab)))
		pws = append(pws, placedWin{w, row, lab})
	}
	top := 6.0
	spanH := float64(len(spanRows)) * (rowPx + 2)
	laneTop := top + spanH + 4
	laneY := func(i int) float64 { return laneTop + float64(i)*20 + 10 }
	axisY := laneTop + float64(len(lanes))*20 + 6

	for _, p := range pws {
		y := top + float64(p.row)*(rowPx+2)
		x0, x1 := xOf(p.w.from), xOf(p.w.to)
		fmt.Fprintf(&b, `<rect class="span" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#fff3c4" stroke="#d4a300"/>`, x0, y, max(x1-x0, 1), rowPx)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#fff3c4" opacity="0.45"/>`, x0, laneTop, max(x1-x0, 1), axisY-laneTop)
		text(&b, x0+4, y+12.5, "", "sl", p.label)
	}
	for i, l := range lanes {
		y := laneY(i)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e3e3e3"/>`, left, left+plotW, y, y)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" class="ln">%s<title>%s</title></text>`, padLeft, y+4, template.HTMLEscapeString(fit(l, left-padLeft-8)), template.HTMLEscapeString(l))
	}
	used := map[shape]bool{}
	for _, op := range ops {
		s := opShape(op)
		used[s] = true
		y := laneY(lane[op.Actor])
		stop := max(op.End, op.Start)
		if x0, x1 := xOf(op.Start), xOf(stop); x1-x0 > 2 {
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#b0bec5" stroke-width="3"/>`, x0, x1, y, y)
		}
		drawShape(&b, s, xOf(stop), y, op.String())
	}
	// The operations that make a failure, ringed and labelled on their
	// lane (right of the shape, or left near the end), a label dropped
	// rather than drawn over another on the same lane.
	marked := map[int][][2]float64{}
	for _, op := range ops {
		if op.Mark == "" {
			continue
		}
		used[shMarked] = true
		l := lane[op.Actor]
		x, y := xOf(max(op.End, op.Start)), laneY(l)
		drawShape(&b, shMarked, x, y, op.Mark+": "+op.String())
		label := fit(op.Mark, 300)
		lx := x + 11
		if lx+textWidth(label) > svgW-4 {
			label = fit(op.Mark, max(x-11-left, 0))
			lx = x - 11 - textWidth(label)
		}
		x0, x1 := lx, lx+textWidth(label)
		free := label != "" && x0 >= left
		for _, iv := range marked[l] {
			if x0 < iv[1]+4 && iv[0] < x1+4 {
				free = false
			}
		}
		if free {
			marked[l] = append(marked[l], [2]float64{x0, x1})
			text(&b, lx, y+4, "", "vm", label)
		}
	}
	// Axis with 1-2-5 ticks.
	fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#333"/>`, left, left+plotW, axisY, axisY)
	step := niceStep(end, plotW, 90)
	for t := time.Duration(0); t <= end; t += step {
		x := xOf(t)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#333"/>`, x, x, axisY, axisY+4)
		anchor := "middle"
		if t == 0 {
			anchor = "start"
		}
		text(&b, x, axisY+16, anchor, "tk", tickText(t, step))
	}
	axisLabel := "time since the rule started (kit clock)"
	if truncated {
		axisLabel += fmt.Sprintf("; the first %d of %d operations drawn, the raw history has all", limit, total)
	}
	text(&b, left, axisY+16+rowPx, "", "ax", axisLabel)
	h := legend(&b, used, axisY+16+2*rowPx+4)
	height := axisY + 16 + 2*rowPx + 4 + h
	return template.HTML(fmt.Sprintf(`<svg class="tl" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" aria-label="timeline">`,
		svgW, height, svgW, height) + b.String() + `</svg>`)
}

// tickText writes a tick in the unit of the step, with the decimals the
// step needs and no more ("0", "0.5 s", "20 ms", "5 µs").
func tickText(t, step time.Duration) string {
	if t == 0 {
		return "0"
	}
	unit, name := time.Nanosecond, "ns"
	switch {
	case step >= time.Second:
		unit, name = time.Second, "s"
	case step >= time.Millisecond:
		unit, name = time.Millisecond, "ms"
	case step >= time.Microsecond:
		unit, name = time.Microsecond, "µs"
	}
	if step >= 100*time.Millisecond && step < time.Second {
		unit, name = time.Second, "s"
	}
	decimals := 0
	for q := float64(step) / float64(unit); q < 1 && decimals < 3; q *= 10 {
		decimals++
	}
	return strconv.FormatFloat(float64(t)/float64(unit), 'f', decimals, 64) + " " + name
}

// marksTimeline draws a plan hazard's timeline: the seed's own style, with
// branches as lanes from one first publish, windows that end at a mark as
// spans from t=0, a numbered shape per mark and the marks' words below.
func marksTimeline(marks []profile.Mark) template.HTML {
	if len(marks) == 0 {
		return ""
	}
	// Lanes: "branch A: ..." on its own lane, everything else on one.
	laneOf := func(m profile.Mark) string {
		if strings.HasPrefix(m.Text, "branch ") {
			if i := strings.Index(m.Text, ":"); i > 0 && i < 12 {
				return m.Text[:i]
			}
		}
		return "pipeline"
	}
	var lanes []string
	lane := map[string]int{}
	for _, m := range marks {
		if _, ok := lane[laneOf(m)]; !ok {
			lane[laneOf(m)] = len(lanes)
			lanes = append(lanes, laneOf(m))
		}
	}
	// Slots: one per distinct moment, in order.
	type slot struct {
		when string
		at   time.Duration
	}
	var slots []slot
	slotOf := map[string]int{}
	for _, m := range marks {
		w := markWhen(m)
		if _, ok := slotOf[w]; !ok {
			slotOf[w] = len(slots)
			slots = append(slots, slot{w, m.At.D()})
		}
	}
	left := padLeft + 90.0
	plotW := svgW - left - 40
	xs := make([]float64, len(slots))
	span := slots[len(slots)-1].at - slots[0].at
	for _, s := range slots {
		span = max(span, s.at)
	}
	scaled := span > 0
	minGap := time.Duration(math.MaxInt64)
	for i := 1; i < len(slots); i++ {
		if g := slots[i].at - slots[i-1].at; g > 0 {
			minGap = min(minGap, g)
		}
	}
	if scaled && float64(minGap) < 0.08*float64(span) {
		scaled = false // one long gap would crush the rest: equal spacing, said on the axis
	}
	for i, s := range slots {
		if scaled {
			xs[i] = left + float64(s.at)/float64(span)*plotW
			// The same moment twice (t=0 and t=0+): a small step to the right.
			if i > 0 && s.at == slots[i-1].at {
				xs[i] = xs[i-1] + 34
			}
		} else if len(slots) > 1 {
			xs[i] = left + float64(i)/float64(len(slots)-1)*plotW
		} else {
			xs[i] = left + plotW/2
		}
	}
	var b strings.Builder
	// Spans: a window or record that ends at a mark runs from the first moment.
	var spanRows rows
	type sp struct {
		x0, x1 float64
		row    int
		label  string
	}
	var spans []sp
	for _, m := range marks {
		if markShape(m.Text) != shEnd {
			continue
		}
		x0, x1 := xs[0], xs[slotOf[markWhen(m)]]
		lab := spanLabel(m)
		row := spanRows.place(x0, max(x1, x0+4+textWidth(lab)))
		spans = append(spans, sp{x0, x1, row, lab})
	}
	top := 6.0
	laneTop := top + float64(len(spanRows))*(rowPx+2) + 4
	laneGap := 34.0
	laneY := func(i int) float64 { return laneTop + 18 + float64(i)*laneGap }
	axisY := laneY(len(lanes)-1) + 16
	for _, s := range spans {
		y := top + float64(s.row)*(rowPx+2)
		fmt.Fprintf(&b, `<rect class="span" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#fff3c4" stroke="#d4a300"/>`, s.x0, y, max(s.x1-s.x0, 1), rowPx)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#fff3c4" opacity="0.45"/>`, s.x0, laneTop, max(s.x1-s.x0, 1), axisY-laneTop)
		text(&b, s.x0+4, y+12.5, "", "sl", s.label)
	}
	for i, l := range lanes {
		y := laneY(i)
		if l == "pipeline" && len(lanes) > 1 {
			l = "first attempt" // the branches fork from it
		}
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#cfd8dc" stroke-width="1.5"/>`, left, left+plotW, y, y)
		text(&b, padLeft, y+4, "", "ln", fit(l, left-padLeft-8))
	}
	// Branches fork from the first moment on the first lane.
	if len(lanes) > 1 {
		for i := 1; i < len(lanes); i++ {
			fmt.Fprintf(&b, `<path d="M%.1f %.1fC%.1f %.1f %.1f %.1f %.1f %.1f" fill="none" stroke="#90a4ae" stroke-dasharray="3 2"/>`,
				xs[0], laneY(0), xs[0]+20, laneY(0), xs[0]+10, laneY(i), xs[0]+40, laneY(i))
		}
	}
	used := map[shape]bool{}
	// Marks of one moment on one lane share one number label ("4,5"):
	// stacked, their labels would meet.
	type spot struct{ lane, slot int }
	var spots []spot
	nums := map[spot][]string{}
	for i, m := range marks {
		s := markShape(m.Text)
		used[s] = true
		li := lane[laneOf(m)]
		x, y := xs[slotOf[markWhen(m)]], laneY(li)
		drawShape(&b, s, x, y, markWhen(m)+": "+m.Text)
		k := spot{li, slotOf[markWhen(m)]}
		if nums[k] == nil {
			spots = append(spots, k)
		}
		nums[k] = append(nums[k], strconv.Itoa(i+1))
	}
	var numRows = map[int]*rows{}
	for _, k := range spots {
		// The number above its shape, one row up if another is there.
		if numRows[k.lane] == nil {
			numRows[k.lane] = &rows{}
		}
		x, y := xs[k.slot], laneY(k.lane)
		n := strings.Join(nums[k], ",")
		w := textWidth(n)
		r := numRows[k.lane].place(x-w/2, x+w/2)
		text(&b, x, y-9-float64(r)*14, "middle", "nm", n)
	}
	// Axis: a tick per moment, labels on as many rows as they need.
	fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#333"/>`, left, left+plotW, axisY, axisY)
	var tickRows rows
	for i, s := range slots {
		x := xs[i]
		w := textWidth(s.when)
		r := tickRows.place(x-w/2, x+w/2)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#333"/>`, x, x, axisY, axisY+4+float64(r)*rowPx)
		text(&b, x, axisY+16+float64(r)*rowPx, "middle", "tk", s.when)
	}
	y := axisY + 16 + float64(len(tickRows))*rowPx
	axis := "time after the first attempt (to scale)"
	switch {
	case span == 0:
		axis = "order of events (no durations declared: t0, t0+, t1 and later name the order)"
	case !scaled:
		axis = "time after the first attempt (not to scale: the gaps differ too much; each tick names its time)"
	}
	text(&b, left, y, "", "ax", axis)
	y += rowPx + 4
	// The marks' words, numbered, wrapped to the width.
	for i, m := range marks {
		prefix := fmt.Sprintf("%d  %s  ", i+1, markWhen(m))
		lines := wrap(m.Text, svgW-padLeft-8-textWidth(prefix))
		for j, l := range lines {
			if j == 0 {
				text(&b, padLeft, y, "", "mt", prefix+l)
			} else {
				text(&b, padLeft+textWidth(prefix), y, "", "mt", l)
			}
			y += rowPx
		}
	}
	y += 6
	h := legend(&b, used, y)
	height := y + h
	return template.HTML(fmt.Sprintf(`<svg class="tl" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" aria-label="hazard timeline">`,
		svgW, height, svgW, height) + b.String() + `</svg>`)
}

// markWhen is a mark's moment as the axis names it ("t=4 min", "t0+").
func markWhen(m profile.Mark) string {
	if m.Label != "" {
		return m.Label
	}
	return "t=" + durationText(m.At.D())
}

// spanLabel names the window a mark ends ("de-dupe window 0 → 5 min").
func spanLabel(m profile.Mark) string {
	t := strings.TrimPrefix(m.Text, "the ")
	for _, cut := range []string{" ends", " expires"} {
		if i := strings.Index(t, cut); i > 0 {
			t = t[:i]
			break
		}
	}
	return t + ": 0 → " + durationText(m.At.D())
}
