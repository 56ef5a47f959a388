package reports

import (
	"html/template"
	"io"
	"strings"
	"time"
	"unicode"

	"github.com/onceproof/tck/internal/safetext"
	"github.com/onceproof/tck/internal/verdict"
)

// HTML writes report.html: one self-contained file (inline CSS and SVG, no
// script, no web font, nothing fetched from the network) that reads as a
// design-review document.
func HTML(w io.Writer, r *Report) error {
	var b strings.Builder
	if err := page.Execute(&b, buildView(r)); err != nil {
		return err
	}
	// html/template escapes markup, not control characters: a target's ESC
	// or bidi override is shown escaped, the page's own layout kept.
	_, err := io.WriteString(w, safetext.Lines(b.String()))
	return err
}

// FontStack is report.html's font list: the system face for Latin text,
// then CJK faces so the seed documents' Chinese quotes render as text on
// Linux (Noto, from fonts-noto-cjk), macOS (PingFang) and Windows (YaHei).
const FontStack = `system-ui,"Segoe UI",Roboto,"DejaVu Sans","Noto Sans","Noto Sans CJK SC","Noto Sans SC","Source Han Sans SC","PingFang SC","Microsoft YaHei",sans-serif`

// monoStack is the same for code and timeline labels.
const monoStack = `"DejaVu Sans Mono","Liberation Mono",Menlo,Consolas,monospace,"Noto Sans Mono CJK SC","Noto Sans CJK SC","Noto Sans SC","Source Han Sans SC","PingFang SC","Microsoft YaHei"`

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"counts":    counts,
	"when":      func(t time.Time) string { return t.Format("2006-01-02 15:04:05 MST") },
	"secs":      func(ms int64) string { return runDuration(float64(ms)) },
	"lang":      func(s string) string { return map[bool]string{true: "zh-Hans", false: "en"}[hasHan(s)] },
	"n":         func(c map[verdict.Verdict]int, v string) int { return c[verdict.Verdict(v)] },
	"font":      func() template.CSS { return template.CSS(FontStack) },
	"mono":      func() template.CSS { return template.CSS(monoStack) },
	"open":      func(v verdict.Verdict) bool { return v == verdict.Fail || v == verdict.Unknown },
	"short":     shortVerdict,
	"join":      strings.Join,
	"multiline": func(s string) bool { return strings.Contains(s, "\n") },
	"absent":    func(v verdict.Verdict) bool { return v == Absent },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>onceproof conformance report{{if .R.Plan}}: {{.R.Plan.Profile}}{{end}}</title>
<style>
:root{--ok:#1b5e20;--bad:#b00020;--warn:#8a5a00;--mute:#666}
body{font:15px/1.5 {{font}};margin:2em auto;max-width:1120px;color:#222;padding:0 1.2em}
h1{font-size:1.7em;margin-bottom:.2em}h2{border-bottom:2px solid #ddd;padding-bottom:.15em;margin-top:2em}h3{margin:1.4em 0 .3em}
table{border-collapse:collapse;width:100%;margin:.4em 0 1.2em;font-size:.93em}td,th{border:1px solid #d8d8d8;padding:4px 7px;text-align:left;vertical-align:top}
th{background:#f3f4f6}table.env th{width:13em}td.id,td.t{white-space:nowrap}td.c{text-align:center}
.pass{color:var(--ok)}.fail{color:var(--bad);font-weight:bold}.unknown{color:var(--warn);font-weight:bold}.not-applicable,.skipped,.absent{color:var(--mute)}
.v{white-space:nowrap}.banner{padding:.7em 1em;border-radius:5px;background:#e8f3ea;border-left:6px solid var(--ok)}
.banner.bad{background:#fbeaea;border-left-color:var(--bad)}.banner.warn{background:#fff5e0;border-left-color:var(--warn)}
blockquote{margin:.4em 0;padding:.35em .9em;border-left:4px solid #90a4ae;background:#f6f8fa}
.src{color:var(--mute);font-size:.88em}.who{font-size:.85em;padding:1px 6px;border-radius:3px;background:#eceff1;white-space:nowrap}
.who.kit{background:#e3f2fd}.who.target{background:#fdecea}.who.profile{background:#f3e5f5}
details{margin:.3em 0 .8em}summary{cursor:pointer}pre,code{font-family:{{mono}};font-size:.86em}pre{background:#f7f7f7;padding:.5em;overflow-x:auto;white-space:pre-wrap}
section.rule{border-top:1px solid #e5e5e5;padding-top:.4em}
svg.tl{display:block;max-width:100%;height:auto;margin:.5em 0;background:#fff;border:1px solid #eee}
svg.tl text{font-family:{{mono}};font-size:11px;fill:#222}svg.tl text.tk,svg.tl text.ax{fill:#444}svg.tl text.vm{fill:#b00020;font-weight:bold;paint-order:stroke;stroke:#fff;stroke-width:3px}svg.tl text.nm{font-weight:bold;fill:#37474f}
.ops td{font-family:{{mono}};font-size:.8em}dl.gl dt{font-weight:bold;margin-top:.5em}dl.gl dd{margin-left:1.2em}
.fn{font-size:.88em;color:#444}nav ol{columns:2}ul.first{margin:.5em 0 0;padding-left:1.3em}ul.first li{margin:.2em 0}.gap{color:var(--warn)}
@media print{details{display:block}summary{display:none}body{max-width:none}}
</style></head><body>
<h1>onceproof conformance report</h1>
<p class="banner{{if eq .R.Summary.ExitCode 1}} bad{{else if .R.Summary.ExitCode}} warn{{end}}"><b>{{.R.Summary.Conclusion}}</b> (exit code {{.R.Summary.ExitCode}}){{if .Rules}}: {{counts .R.Summary.Counts}}{{end}}.
</p>
{{if .Failures}}<ul class="first">{{range .Failures}}<li><a href="#{{.Anchor}}"><b class="{{.Verdict}}">MUST {{if eq .Verdict "fail"}}failed{{else}}undecided{{end}}: {{.Rule}}</b> on {{.Target}}</a> ({{.Title}}): {{.OneLine}}</li>{{end}}</ul>{{end}}
{{if .R.Gaps}}<ul class="first gaps">{{range .R.Gaps}}<li><b class="gap">{{.Label}}</b> on {{.Target}}: <b>{{.Missing}}</b> ({{join .Rules ", "}} not applicable): {{.Leaves}}; left to the {{.Who}}: {{.Compensate}} <span class="src" lang="zh-Hans">({{.Source}})</span></li>{{end}}</ul>{{end}}
{{if or .TargetHazards .KitHazards}}<h2 id="hazards">Hazards found by the run</h2>
<p>Each hazard says whose it is. A hazard on a passing rule is not a failure: it is a risk the rule demonstrated or found in the settings.</p>
{{if .TargetHazards}}<h3>On the target</h3><ul>{{range .TargetHazards}}<li><a href="#{{.Anchor}}"><b>{{.Rule}}</b> on {{.Target}}</a> <span class="who target">{{.Whose}}</span>: {{.Text}}</li>{{end}}</ul>{{end}}
{{if .KitHazards}}<h3>Of the kit's test set-up</h3><ul>{{range .KitHazards}}<li><a href="#{{.Anchor}}"><b>{{.Rule}}</b> on {{.Target}}</a> <span class="who kit">{{.Whose}}</span>: {{.Text}}</li>{{end}}</ul>{{end}}{{end}}
<p>Command <code>{{.R.Run.Command}}</code>, started {{when .R.Run.Started}}{{if .Rules}}, took {{secs .R.Run.DurationMs}}{{end}}. Kit {{.R.Kit.Name}} {{.R.Kit.Version}} ({{.R.Kit.GoVersion}}).
Terms in <i>italics</i> below are explained in the <a href="#glossary">glossary</a>.</p>
<nav><ol>{{if .Summary}}<li><a href="#summary">Summary by suite and target</a></li>{{end}}{{if .Matrices}}<li><a href="#matrix">Rules by targets</a></li>{{end}}
{{if .Env}}<li><a href="#environment">Environment</a></li>{{end}}{{if or .TargetHazards .KitHazards}}<li><a href="#hazards">Hazards found by the run</a></li>{{end}}
{{if .Plan}}<li><a href="#plan">Pipeline profile: static analysis</a></li>{{end}}{{if .All}}<li><a href="#verdicts">Verdicts</a></li>{{end}}{{if .NotChecked}}<li><a href="#notchecked">Not checked, and why</a></li>{{end}}{{if .Rules}}<li><a href="#rules">Rules: contract, evidence, timeline</a></li>{{end}}<li><a href="#glossary">Glossary</a></li></ol></nav>

{{if .Summary}}<h2 id="summary">Summary by suite and target</h2>
<table><tr><th>suite</th><th>target</th><th>status</th><th>pass</th><th>fail</th><th>unknown</th><th>not-applicable</th><th>skipped</th><th>MUST failed</th><th>MUST undecided</th></tr>
{{range .Summary}}<tr><td>{{.Suite}}</td><td>{{.Target}}</td><td>{{.Status}}</td><td class="c pass">{{n .Counts "pass"}}</td><td class="c{{if n .Counts "fail"}} fail{{end}}">{{n .Counts "fail"}}</td><td class="c{{if n .Counts "unknown"}} unknown{{end}}">{{n .Counts "unknown"}}</td><td class="c">{{n .Counts "not-applicable"}}</td><td class="c">{{n .Counts "skipped"}}</td><td class="c{{if .MustFailed}} fail{{end}}">{{.MustFailed}}</td><td class="c{{if .MustUnk}} unknown{{end}}">{{.MustUnk}}</td></tr>
{{end}}</table>{{end}}

{{if .Matrices}}<h2 id="matrix">Rules by targets</h2>
{{range .Matrices}}<h3>{{.Suite}} suite</h3>
<table class="matrix"><tr><th>rule</th><th>level</th><th>title</th>{{range .Targets}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><td class="id"><b>{{.Rule}}</b></td><td>{{.Level}}</td><td>{{.Title}}</td>{{range .Cells}}<td class="c v {{if absent .Verdict}}absent{{else}}{{.Verdict}}{{end}}" title="{{.Reason}}">{{if .Anchor}}<a class="{{.Verdict}}" href="#{{.Anchor}}">{{short .Verdict}}</a>{{else}}{{short .Verdict}}{{end}}{{if .Note}}<sup>{{.Note}}</sup>{{end}}</td>{{end}}</tr>
{{end}}</table>
{{if .Footnotes}}<ol class="fn">{{range .Footnotes}}<li>not applicable on {{.}}</li>{{end}}</ol>{{end}}{{end}}{{end}}

{{if .Env}}<h2 id="environment">Environment</h2>
<p>Kit {{.R.Kit.Name}} {{.R.Kit.Version}}, built with {{.R.Kit.GoVersion}}.</p>
{{range .Env}}<h3>{{.Target}}</h3><table class="env">
<tr><th>reached</th><td>{{.Mode}}</td></tr>
<tr><th>server version</th><td>{{.Version}}</td></tr>
<tr><th>read from the server</th><td>{{range .Server}}{{.}}<br>{{else}}{{if not .Compared}}<span class="src">nothing read beyond the version</span>{{end}}{{end}}{{range .Compared}}{{.N}} settings compared in <a href="#{{.Anchor}}">{{.Rule}}</a><br>{{end}}</td></tr>
<tr><th><i>time scale</i></th><td>{{.Scale}}</td></tr>
<tr><th>settings under test</th><td><b>{{.SettingsFrom}}</b>{{range .SettingsList}}<br>{{.}}{{end}}</td></tr>
<tr><th>status</th><td>{{.Status}}{{range .Notes}}<br><span class="src">{{.}}</span>{{end}}</td></tr>
</table>{{end}}{{end}}

{{with .Plan}}<h2 id="plan">Pipeline profile {{.Profile}}: static analysis</h2>
<p>From <code>{{.File}}</code>; nothing was started for this part. These hazards are <span class="who profile">the pipeline profile's (the team's declared design)</span>.</p>
<h3>Declared pipeline</h3><ul>{{range .Pipeline}}<li><code>{{.}}</code></li>{{end}}</ul>
<h3>{{len .Hazards}} hazard{{if ne (len .Hazards) 1}}s{{end}}</h3>{{if not .Hazards}}<p>No hazard found.</p>{{end}}
{{range .Hazards}}<section class="hazard" id="h{{.N}}"><h3>H{{.N}} {{.Rule}} <code>{{.Check}}</code>: {{.Subject}}</h3>
<p>{{.Summary}}</p><p class="src">{{$.R.Plan.File}}:{{.Line}} <code>{{.Field}}</code>{{if .Anchor}}; checked live in <a href="#{{.Anchor}}">{{.Rule}}</a>{{end}}</p>
{{if .Contract}}<blockquote lang="{{lang .Contract}}">{{.Contract}}</blockquote><p class="src">source: {{.Source}}</p>{{end}}
<p><b>Arithmetic</b></p><ul>{{range .Arithmetic}}<li><code>{{.}}</code></li>{{end}}</ul>
{{if .SVG}}<p><b>Timeline</b></p>{{.SVG}}{{end}}</section>
{{end}}
<h3>What each acknowledgement proves, and what it does not</h3><p class="src">seed 002 §六, §八, for the declared pipeline</p>
<table><tr><th>layer</th><th>acknowledgement</th><th>proves</th><th>does not prove</th></tr>
{{range .Acks}}<tr><td>{{.Layer}}</td><td>{{.Ack}}</td><td>{{.Proves}}</td><td><ul>{{range .DoesNotProve}}<li>{{.}}</li>{{end}}</ul></td></tr>{{end}}</table>{{end}}

{{if .All}}<h2 id="verdicts">Verdicts</h2>
<table><tr><th>target</th><th>rule</th><th>level</th><th>kind</th><th>verdict</th><th>reason (of a verdict other than pass; each rule's section has its own)</th></tr>
{{range .All}}<tr><td>{{.Target}}</td><td class="id"><a href="#{{.Anchor}}"><b>{{.Rule}}</b></a></td><td>{{.Level}}</td><td><i>{{.Kind}}</i></td><td class="v {{.Verdict}}">{{.Verdict}}</td><td>{{if ne .Verdict "pass"}}{{.Brief}}{{end}}</td></tr>
{{end}}</table>{{end}}

{{if .NotChecked}}<h2 id="notchecked">Not checked, and why</h2>
<p>Rules a target did not check, grouped by the reason: they certify nothing either way.</p>
{{range .NotChecked}}<h3>{{len .Rules}} rule{{if ne (len .Rules) 1}}s{{end}} {{.Verdict}} on {{.Target}}</h3><p>{{.Reason}}</p>
<ul>{{range .Rules}}<li id="{{.Anchor}}"><b>{{.Rule}}</b> {{.Title}} <span class="src">({{.Level}})</span></li>{{end}}</ul>
{{end}}{{end}}

{{if or .Rules .PassesOmitted}}<h2 id="rules">Rules: contract, evidence, timeline</h2>
{{if .PassesOmitted}}<p>{{.PassesOmitted}} passing results have no section and no verdicts row here: a report of more than 2000 results gives them only to the results that did not pass. Each pass is in the matrix; its evidence is in its shard's report.</p>{{end}}
{{range .Rules}}<section class="rule" id="{{.Anchor}}"><h3>{{.Rule}} on {{.Target}}: <span class="{{.Verdict}}">{{.Verdict}}</span></h3>
<p><b>{{.Title}}</b> <span class="src">({{.Level}}, <i>{{.Kind}}</i>, {{.Duration}})</span></p>
{{if .Contract}}<blockquote lang="{{lang .Contract}}">{{.Contract}}</blockquote><p class="src">source: {{.Source}}</p>{{end}}
<p>{{.Reason}}</p>
{{range .Hazards}}<p>hazard <span class="who {{.Owner}}">{{.Whose}}</span>: {{.Text}}</p>{{end}}
{{if .Comparisons}}<table><tr><th>setting</th><th>{{.DeclaredLabel}}</th><th>actual</th><th>source</th><th>match</th></tr>
{{range .Comparisons}}<tr><td>{{.Setting}}</td><td>{{.Declared}}</td><td>{{.Actual}}</td><td>{{if eq .Source "server"}}read from the server{{else}}{{.Source}}{{end}}</td><td class="{{if .Match}}pass{{else}}fail{{end}}">{{if .Match}}yes{{else}}NO{{end}}</td></tr>{{end}}</table>{{end}}
{{if .Shown}}{{.Timeline}}{{end}}
{{if or .Figures .Notes .Ops}}<details{{if open .Verdict}} open{{end}}><summary>evidence: {{len .Figures}} figures{{if .Ops}}, {{.OpsLabel}} of {{.OpsTotal}} operations{{end}}</summary>
{{if .Figures}}<table><tr><th>figure</th><th>value</th></tr>{{range .Figures}}<tr><td>{{.Name}}</td><td>{{.Value}}</td></tr>{{end}}</table>{{end}}
{{range .Notes}}{{if multiline .}}<pre>{{.}}</pre>{{else}}<p class="note">{{.}}</p>{{end}}{{end}}
{{if not .Shown}}{{.Timeline}}{{end}}
{{if .Ops}}<table class="ops"><tr><th>start</th><th>end</th><th>actor</th><th>action</th><th>value</th><th>outcome</th><th>result</th><th>drawn as</th></tr>{{range .Ops}}<tr><td class="t">{{.Start}}</td><td class="t">{{.End}}</td><td>{{.Actor}}</td><td>{{.Action}}</td><td>{{.Value}}</td><td>{{.Outcome}}</td><td>{{.Result}}</td><td>{{.Shape}}</td></tr>{{end}}</table>
{{if gt .OpsTotal (len .Ops)}}<p class="src">the first {{len .Ops}} of {{.OpsTotal}} operations; all are in <code>{{.History}}</code></p>{{end}}{{end}}
</details>{{end}}{{if and .OpsTotal (not .Ops)}}<p class="src">{{.OpsTotal}} operations recorded: <code>{{.History}}</code>{{if .DrawnFor}}; the timeline of a pass is drawn <a href="#{{.DrawnFor}}">for {{.DrawnTarget}}</a>{{end}}</p>{{end}}</section>
{{end}}{{end}}

<h2 id="glossary">Glossary</h2>
<dl class="gl">{{range .Glossary}}<dt>{{.Term}}</dt><dd>{{.Text}}</dd>{{end}}</dl>
</body></html>
`))

func shortVerdict(v verdict.Verdict) string {
	switch v {
	case verdict.NotApplicable:
		return "n/a"
	case Absent:
		return "not run"
	}
	return string(v)
}
