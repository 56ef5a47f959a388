// Package browsertest loads a report.html in headless Chromium (through
// chromedp) and says what a reader's browser would: console errors and
// uncaught exceptions, every network request besides the file itself, the
// visible text, whether CJK text renders as glyphs or as tofu boxes, and
// which SVG labels overlap. Its tests hold the report to that in CI.
package browsertest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/onceproof/tck/internal/leftovers"
)

// ErrNoBrowser: no Chromium binary was found.
var ErrNoBrowser = errors.New("no chromium found (install the Debian package chromium, or set TCK_CHROMIUM to a Chrome/Chromium binary)")

// Find returns the Chromium binary: $TCK_CHROMIUM, else the first of
// chromium, chromium-browser, google-chrome on PATH.
func Find() (string, error) {
	if p := os.Getenv("TCK_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("TCK_CHROMIUM=%s: %w", p, err)
		}
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoBrowser
}

// Browser is one headless Chromium; pages are opened in it one at a time.
type Browser struct {
	ctx    context.Context
	cancel context.CancelFunc
	dir    string
}

// Start launches Chromium with a fresh profile in a temporary directory,
// no network beyond file:// (a proxy that goes nowhere) and a fixed window.
func Start(ctx context.Context, env ...string) (*Browser, error) {
	bin, err := Find()
	if err != nil {
		return nil, err
	}
	dir, err := leftovers.MkdirTemp("tck-chromium-*")
	if err != nil {
		return nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(1200, 900),
		chromedp.NoSandbox, // CI runs as root
		chromedp.Flag("headless", "new"),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("allow-file-access-from-files", false),
		// Anything that tries the network goes to a dead proxy: the
		// request is still seen by the listener, and nothing leaves.
		chromedp.ProxyServer("http://127.0.0.1:9"),
		chromedp.Env(env...),
	)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil {
		bcancel()
		acancel()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	return &Browser{ctx: bctx, cancel: func() { bcancel(); acancel() }, dir: dir}, nil
}

// Close ends the browser and removes its profile.
func (b *Browser) Close() {
	b.cancel()
	os.RemoveAll(b.dir)
}

// Page is what loading one file showed.
type Page struct {
	URL      string
	Errors   []string // console.error calls, uncaught exceptions, log entries of level error
	Requests []string // every URL requested other than the file itself
	Text     string   // document.body.innerText as the page opens
	Overlaps []string // pairs of SVG <text> labels whose boxes intersect
	Labels   int      // SVG <text> labels measured
	CJK      CJK
	// NotApplicable are the not-applicable cells of the matrices, with
	// their hover text and footnote.
	NotApplicable []MatrixCell
	PNG           []byte   // screenshot of the top of the page (3000 px), as it opens
	Pieces        [][]byte // the page in pieces of 3000 px, Options.Pieces of them
	// SVGPNG is a screenshot of the first element matched by Options.Shot.
	SVGPNG []byte
	// SVGs is how many SVG images the page holds.
	SVGs int
	// Marks are the labels of the violating operations marked in the
	// timelines; Rings how many operations are ringed.
	Marks []string
	Rings int
	// With Options.FirstScreen: the text a reader sees without scrolling
	// in a 1400x1000 window, the links there, and its screenshot.
	FirstScreen      string
	FirstScreenLinks []Link
	FirstScreenPNG   []byte
}

// Link is one link: its text and the id of the element it points to
// (Target "" when that element is not on the page).
type Link struct {
	Text   string `json:"text"`
	Href   string `json:"href"`
	Target string `json:"target"`
}

// firstScreenW and firstScreenH are the window of Options.FirstScreen.
const (
	firstScreenW = 1400
	firstScreenH = 1000
)

// firstScreenJS reads the text and links inside the window as the page
// opens: every text node whose box starts above the window's bottom.
const firstScreenJS = `(() => {
  const h = window.innerHeight, parts = [], links = [];
  const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = w.nextNode(); n; n = w.nextNode()) {
    const r = document.createRange(); r.selectNodeContents(n);
    const b = r.getBoundingClientRect();
    if (b.height > 0 && b.top < h && b.bottom > 0) parts.push(n.textContent);
  }
  for (const a of document.querySelectorAll('a[href^="#"]')) {
    const b = a.getBoundingClientRect();
    if (b.height > 0 && b.top < h && b.bottom > 0) {
      const id = decodeURIComponent(a.getAttribute('href').slice(1));
      links.push({text: a.textContent, href: a.getAttribute('href'), target: document.getElementById(id) ? id : ""});
    }
  }
  return {text: parts.join(" "), links};
})()`

// CJK is the tofu test: the same two Han characters drawn on a canvas in
// the page's own font. Tofu (no CJK font) draws every missing character as
// the same .notdef box, so two different characters come out pixel-equal,
// and equal to an unassigned code point.
type CJK struct {
	Sample     string `json:"sample"`
	Font       string `json:"font"`
	Distinct   bool   `json:"distinct"`   // the two characters differ
	NotTofu    bool   `json:"notTofu"`    // the first differs from an unassigned code point's box
	InkPixels  int    `json:"inkPixels"`  // pixels the first character inked
	SampleFrom string `json:"sampleFrom"` // the element the sample came from
}

// Renders says the CJK sample was drawn as real glyphs.
func (c CJK) Renders() bool { return c.Sample != "" && c.Distinct && c.NotTofu && c.InkPixels > 0 }

// Options of one load.
type Options struct {
	// Shot is a CSS selector whose first match is screenshotted into SVGPNG.
	Shot string
	// Pieces is how many 3000 px screenshots of the page to take (at least 1).
	Pieces int
	// FirstScreen reads what a 1400x1000 window shows as the page opens.
	FirstScreen bool
}

// Load opens path as file:// and collects the Page. It waits for the load
// event, then a moment for late console messages.
func (b *Browser) Load(path string, o Options) (*Page, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	u := (&url.URL{Scheme: "file", Path: abs}).String()
	p := &Page{URL: u}
	var mu sync.Mutex
	// The listener is on the tab before its first command, so it sees
	// every event of the load.
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithListener(func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
				var parts []string
				for _, a := range e.Args {
					if len(a.Value) > 0 {
						parts = append(parts, string(a.Value))
					} else {
						parts = append(parts, a.Description)
					}
				}
				p.Errors = append(p.Errors, "console."+string(e.Type)+": "+strings.Join(parts, " "))
			}
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				msg += " " + d.Exception.Description
			}
			p.Errors = append(p.Errors, fmt.Sprintf("exception at %d:%d: %s", d.LineNumber, d.ColumnNumber, msg))
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				p.Errors = append(p.Errors, "log: "+e.Entry.Text+" "+e.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			if e.Request.URL != u {
				p.Requests = append(p.Requests, e.Request.URL)
			}
		}
	}))
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	defer cancelT()
	yes := true
	run := func() error {
		if err := chromedp.Do(ctx,
			chromedp.Navigate(u),
			chromedp.WaitReady(chromedp.CSS("body")),
			// Late console messages (a timer's error) get a moment.
			chromedp.Sleep(300*time.Millisecond),
		); err != nil {
			return err
		}
		var err error
		if o.FirstScreen {
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(firstScreenW, firstScreenH)); err != nil {
				return err
			}
			type shown struct {
				Text  string `json:"text"`
				Links []Link `json:"links"`
			}
			fs, err := chromedp.Run(ctx, chromedp.Evaluate[shown](firstScreenJS))
			if err != nil {
				return err
			}
			p.FirstScreen, p.FirstScreenLinks = fs.Text, fs.Links
			shot, err := chromedp.Call(ctx, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng})
			if err != nil {
				return err
			}
			p.FirstScreenPNG = shot.Data
		}
		// Visible text as the page opens, before any <details> is opened.
		if p.Text, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`)); err != nil {
			return err
		}
		// Screenshots as a reader first sees the page.
		height, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.documentElement.scrollHeight`))
		if err != nil {
			return err
		}
		// A whole report can be taller than Chromium captures in one
		// image: pieces of 3000 px, as many as asked for.
		for y := 0.0; y < height && len(p.Pieces) < max(o.Pieces, 1); y += 3000 {
			shot, err := chromedp.Call(ctx, page.CaptureScreenshot, page.CaptureScreenshotParams{
				Format: page.CaptureScreenshotFormatPng, CaptureBeyondViewport: &yes, FromSurface: &yes,
				Clip: &page.Viewport{X: 0, Y: y, Width: 1200, Height: min(3000, height-y), Scale: 1},
			})
			if err != nil {
				return err
			}
			p.Pieces = append(p.Pieces, shot.Data)
		}
		p.PNG = p.Pieces[0]
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('details').forEach(d => d.open = true)`)); err != nil {
			return err
		}
		if p.Overlaps, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](overlapJS)); err != nil {
			return err
		}
		if p.Labels, err = chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('svg text').length`)); err != nil {
			return err
		}
		if p.SVGs, err = chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('svg').length`)); err != nil {
			return err
		}
		if p.Marks, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('svg.tl text.vm')).map(e => e.textContent)`)); err != nil {
			return err
		}
		if p.Rings, err = chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('svg.tl circle.vmr').length`)); err != nil {
			return err
		}
		if p.CJK, err = chromedp.Run(ctx, chromedp.Evaluate[CJK](cjkJS)); err != nil {
			return err
		}
		if p.NotApplicable, err = chromedp.Run(ctx, chromedp.Evaluate[[]MatrixCell](naJS)); err != nil {
			return err
		}
		if o.Shot != "" {
			if p.SVGPNG, err = chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(o.Shot), chromedp.NodeVisible)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := run(); err != nil {
		return nil, fmt.Errorf("loading %s: %w", u, err)
	}
	mu.Lock()
	defer mu.Unlock()
	out := *p
	out.Errors = append([]string(nil), p.Errors...)
	out.Requests = append([]string(nil), p.Requests...)
	return &out, nil
}

// MatrixCell is one not-applicable cell of a rules-by-targets matrix.
type MatrixCell struct {
	Rule     string `json:"rule"`
	Title    string `json:"title"`    // the hover text
	Footnote string `json:"footnote"` // the text of the footnote its number points to, "" if none
}

// naJS reads every not-applicable matrix cell: its title attribute and the
// footnote (the list after the table) its <sup> number points to.
const naJS = `(() => {
  const out = [];
  document.querySelectorAll('table.matrix').forEach(tb => {
    let ol = tb.nextElementSibling; if (!ol || ol.tagName !== 'OL') ol = null;
    tb.querySelectorAll('td.not-applicable').forEach(td => {
      const sup = td.querySelector('sup'); const n = sup ? parseInt(sup.textContent, 10) : 0;
      const li = ol && n > 0 ? ol.children[n - 1] : null;
      out.push({rule: td.parentElement.cells[0].textContent, title: td.getAttribute('title') || '', footnote: li ? li.textContent : ''});
    });
  });
  return out;
})()`

// overlapJS lists the pairs of <text> labels of one SVG whose bounding
// boxes (getBBox, in the SVG's user space) intersect by more than half a
// pixel each way.
const overlapJS = `(() => {
  const out = [];
  document.querySelectorAll('svg').forEach((svg, si) => {
    const boxes = [];
    svg.querySelectorAll('text').forEach(t => {
      const b = t.getBBox();
      if (b.width > 0 && b.height > 0) boxes.push({b, s: t.textContent.slice(0, 40)});
    });
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i].b, c = boxes[j].b, e = 0.5;
      if (a.x < c.x + c.width - e && c.x < a.x + a.width - e && a.y < c.y + c.height - e && c.y < a.y + a.height - e)
        out.push('svg ' + si + ': "' + boxes[i].s + '" overlaps "' + boxes[j].s + '"');
    }
  });
  return out;
})()`

// cjkJS draws two distinct Han characters of the page's first Chinese
// quote, and an unassigned code point, in that element's computed font.
const cjkJS = `(() => {
  const el = document.querySelector('[lang="zh-Hans"]') || document.body;
  const han = [...new Set((el.textContent.match(/\p{Script=Han}/gu) || []))];
  const font = getComputedStyle(el).fontFamily;
  const draw = s => {
    const c = document.createElement('canvas'); c.width = 48; c.height = 48;
    const x = c.getContext('2d'); x.font = '36px ' + font; x.fillStyle = '#000'; x.textBaseline = 'top';
    x.fillText(s, 4, 4);
    const d = x.getImageData(0, 0, 48, 48).data; let ink = 0; const a = [];
    for (let i = 3; i < d.length; i += 4) { a.push(d[i]); if (d[i] > 0) ink++; }
    return {key: a.join(','), ink};
  };
  if (han.length < 2) return {sample: han.join(''), font, distinct: false, notTofu: false, inkPixels: 0, sampleFrom: el.tagName};
  const a = draw(han[0]), b = draw(han[1]), z = draw('\u0378');
  return {sample: han[0] + han[1], font, distinct: a.key !== b.key, notTofu: a.key !== z.key, inkPixels: a.ink, sampleFrom: el.tagName};
})()`
