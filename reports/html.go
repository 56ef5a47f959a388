package reports

import (
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/verdict"
)

// HTML writes report.html: one self-contained file (inline CSS and SVG, no
// script, nothing fetched from the network).
func HTML(w io.Writer, r *Report) error {
	return page.Execute(w, r)
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"counts":   counts,
	"where":    where,
	"config":   config,
	"timeline": timelineSVG,
	"ops": func(ev *verdict.Evidence) []history.Op {
		if ev == nil {
			return nil
		}
		if len(ev.Minimal) > 0 {
			return ev.Minimal
		}
		return ev.Timeline
	},
	"has": func(ev *verdict.Evidence) bool {
		return ev != nil && (len(ev.Figures)+len(ev.Notes)+len(ev.Timeline)+len(ev.Minimal)) > 0
	},
	"ms":   func(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/1e6) },
	"when": func(t time.Time) string { return t.Format("2006-01-02 15:04:05 MST") },
	"secs": func(ms int64) string { return fmt.Sprintf("%.1f", float64(ms)/1000) },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>onceproof report</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
table{border-collapse:collapse;width:100%;margin:.5em 0 1.5em}td,th{border:1px solid #ddd;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f4f4f4}.pass{color:#17663a}.fail{color:#b00020;font-weight:bold}.unknown{color:#8a5a00;font-weight:bold}
.not-applicable,.skipped{color:#666}.banner{padding:.6em 1em;border-radius:4px;background:#eef5ee}.banner.bad{background:#fbeaea}
details{margin:.3em 0 1em}pre{background:#f8f8f8;padding:.5em;overflow-x:auto;font-size:12px}svg text{font:11px monospace}
</style></head><body>
<h1>onceproof conformance report</h1>
<p class="banner{{if .Summary.ExitCode}} bad{{end}}"><b>{{.Summary.Conclusion}}</b> (exit code {{.Summary.ExitCode}}): {{counts .Summary.Counts}}</p>
<p>Kit {{.Kit.Name}} {{.Kit.Version}} ({{.Kit.GoVersion}}). Command <code>{{.Run.Command}}</code>, started {{when .Run.Started}}, took {{secs .Run.DurationMs}} s.</p>
<h2>Targets</h2>
<table><tr><th>target</th><th>mode</th><th>version</th><th>declared</th><th>status</th></tr>
{{range .Targets}}<tr><td>{{.Name}}</td><td>{{where .}}</td><td>{{.Version}}{{if .Emulator}} (emulator){{end}}</td><td>{{config .Config}}</td><td>{{.Status}}{{if .Mutant}} (deliberately broken){{end}} {{.Error}}{{range .Notes}}<br>{{.}}{{end}}</td></tr>
{{end}}</table>
{{if .Hazards}}<h2>Hazards found</h2><ul>{{range .Hazards}}<li><b>{{.Target}} {{.Rule}}</b>: {{.Text}}</li>{{end}}</ul>{{end}}
<h2>Verdicts</h2>
<table><tr><th>target</th><th>rule</th><th>level</th><th>title</th><th>verdict</th><th>reason</th></tr>
{{range .Results}}<tr><td>{{.Target}}</td><td><a href="#{{.Target}}-{{.Rule}}">{{.Rule}}</a></td><td>{{.Level}}</td><td>{{.Title}}</td><td class="{{.Verdict}}">{{.Verdict}}</td><td>{{.Reason}}</td></tr>
{{end}}</table>
<h2>Evidence</h2>
{{range .Results}}{{if has .Evidence}}<details id="{{.Target}}-{{.Rule}}"{{if eq (print .Verdict) "fail"}} open{{end}}><summary><b>{{.Rule}}</b> on {{.Target}}: <span class="{{.Verdict}}">{{.Verdict}}</span>: {{.Reason}}</summary>
{{with .Evidence}}{{if .Figures}}<table><tr><th>figure</th><th>value</th></tr>{{range .Figures}}<tr><td>{{.Name}}</td><td>{{.Value}} {{.Unit}}</td></tr>{{end}}</table>{{end}}
{{range .Notes}}<pre>{{.}}</pre>{{end}}{{end}}
{{with ops .Evidence}}{{timeline .}}
<table><tr><th>start ms</th><th>end ms</th><th>actor</th><th>action</th><th>value</th><th>outcome</th><th>result</th></tr>{{range .}}<tr><td>{{ms .Start}}</td><td>{{ms .End}}</td><td>{{.Actor}}</td><td>{{.Action}}</td><td>{{.Value}}</td><td>{{.Outcome}}</td><td>{{.Result}}</td></tr>{{end}}</table>{{end}}
</details>{{end}}{{end}}
</body></html>
`))

// timelineSVG draws one lane per actor and one bar per operation, coloured
// by outcome (ok green, fail red, info amber, pending grey).
func timelineSVG(ops []history.Op) template.HTML {
	if len(ops) == 0 {
		return ""
	}
	if len(ops) > 400 {
		ops = ops[:400]
	}
	var actors []string
	lane := map[string]int{}
	var end time.Duration
	for _, op := range ops {
		if _, ok := lane[op.Actor]; !ok {
			lane[op.Actor] = len(actors)
			actors = append(actors, op.Actor)
		}
		if op.End > end {
			end = op.End
		}
		if op.Start > end {
			end = op.Start
		}
	}
	sort.Strings(actors)
	for i, a := range actors {
		lane[a] = i
	}
	if end <= 0 {
		end = 1
	}
	const left, width, row = 110, 860, 18
	height := row*len(actors) + 24
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="timeline">`, left+width+10, height)
	for i, a := range actors {
		y := i*row + 4
		fmt.Fprintf(&b, `<text x="2" y="%d">%s</text><line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#eee"/>`,
			y+12, template.HTMLEscapeString(a), left, left+width, y+9, y+9)
	}
	scale := float64(width) / float64(end)
	for _, op := range ops {
		x := left + int(float64(op.Start)*scale)
		stop := op.End
		if stop < op.Start {
			stop = op.Start
		}
		wd := int(float64(stop-op.Start) * scale)
		if wd < 2 {
			wd = 2
		}
		color := map[history.Outcome]string{history.OK: "#2e9d5b", history.Fail: "#c62828", history.Info: "#e0a000"}[op.Outcome]
		if color == "" {
			color = "#999"
		}
		y := lane[op.Actor]*row + 4
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="12" fill="%s"><title>%s</title></rect>`,
			x, y+3, wd, color, template.HTMLEscapeString(op.String()))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d">0 ms</text><text x="%d" y="%d" text-anchor="end">%.1f ms</text></svg>`,
		left, height-4, left+width, height-4, float64(end)/1e6)
	return template.HTML(b.String())
}
