package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"

	"github.com/onceproof/tck/internal/catalog"

	"github.com/onceproof/tck/internal/verdict"
)

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",chardata"`
}

// JUnit writes junit.xml: one testsuite per target, one testcase per rule.
// A failed MUST is a failure; a failed SHOULD/MAY is reported as a failure
// too (CI decides by the exit code, not by this file); unknown is an error,
// so a CI dashboard never shows it green; not-applicable and skipped are
// skipped with their reason.
func JUnit(w io.Writer, r *Report) error {
	out := junitSuites{Name: "onceproof"}
	index := map[string]int{}
	for _, t := range r.Targets {
		index[t.Name] = len(out.Suites)
		s := junitSuite{Name: t.Name}
		if t.Status == "unavailable" {
			s.Tests, s.Errors = 1, 1
			s.Cases = append(s.Cases, junitCase{Name: "start target", Classname: t.Name, Error: &junitMessage{Message: t.Error, Type: "unavailable"}})
		}
		out.Suites = append(out.Suites, s)
	}
	for _, res := range r.Results {
		i, ok := index[res.Target]
		if !ok {
			index[res.Target] = len(out.Suites)
			i = len(out.Suites)
			out.Suites = append(out.Suites, junitSuite{Name: res.Target})
		}
		s := &out.Suites[i]
		c := junitCase{Name: res.Rule + " " + res.Title, Classname: res.Target, Time: math.Round(res.DurationMs) / 1000}
		if rule, ok := catalog.Lookup(res.Rule); ok {
			// The contract sentence travels with the case, for a CI reader.
			c.SystemOut = "contract: " + rule.Contract + "\nsource: " + rule.Source
		}
		msg := &junitMessage{Message: res.Reason, Type: string(res.Verdict)}
		switch res.Verdict {
		case verdict.Fail:
			msg.Body = fmt.Sprintf("[%s] %s", res.Level, res.Reason)
			if res.Evidence != nil {
				for _, n := range res.Evidence.Notes {
					msg.Body += "\n" + n
				}
			}
			c.Failure = msg
			s.Failures++
		case verdict.Unknown:
			c.Error = msg
			s.Errors++
		case verdict.NotApplicable, verdict.Skipped:
			c.Skipped = msg
			s.Skipped++
		}
		s.Tests++
		s.Cases = append(s.Cases, c)
	}
	for _, s := range out.Suites {
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Errors += s.Errors
		out.Skipped += s.Skipped
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
