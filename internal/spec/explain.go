package spec

import (
	"fmt"
	"regexp"
	"runtime"
	"strings"
)

// explain turns a Gomega failure message into the one line a reason shows:
// the assertion's own description (what was done and what the contract
// expects, the es/mq/co identifier included) and what came back, without
// Gomega's layout ("Expected\n    <string>: ...\nto be empty") or its type
// annotations. The whole message stays in the evidence's notes.
func explain(message string) string {
	lines := strings.Split(strings.TrimRight(message, "\n"), "\n")
	var when string
	if len(lines) > 1 && asyncRe.MatchString(strings.TrimSpace(lines[0])) {
		h := strings.TrimSuffix(strings.TrimSpace(lines[0]), ".")
		when = strings.ToLower(h[:1]) + h[1:]
		lines = lines[1:]
	}
	// The description is what comes before Gomega's own first line.
	i := 0
	for i < len(lines) && !gomegaHead(lines[i]) {
		i++
	}
	desc := strings.TrimSpace(strings.Join(lines[:i], " "))
	got := gomegaGot(lines[i:])
	if v := gotValue(got); v != "" && strings.Contains(desc, v) {
		got = "" // the description already quotes what came back
	}
	out := desc
	switch {
	case out == "":
		out = got
	case got != "":
		out += ": " + got
	}
	if out == "" {
		out = strings.TrimSpace(message)
	}
	if when != "" {
		out += " (" + when + ")"
	}
	return clipLine(out, 400)
}

var asyncRe = regexp.MustCompile(`^(Failed|Timed out) after [0-9.]+s\.$`)

// gomegaHead is a line Gomega's matchers start their part of a message with.
func gomegaHead(l string) bool {
	return strings.HasPrefix(l, "Expected") || strings.HasPrefix(l, "Unexpected error:") || strings.HasPrefix(l, "Unexpected non-nil/non-zero argument")
}

// typeRe is the type annotation Gomega puts before a value.
var typeRe = regexp.MustCompile(`^<[^>]*(>[^:]*)?>: ?`)

// gomegaGot reads the matcher's part of a message: what came back, and what
// the matcher wanted when that says more than the description (a value to
// equal, a length).
func gomegaGot(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	head := strings.TrimSpace(lines[0])
	var values []string // values, each its first meaningful line
	var phrases []string
	for j := 1; j < len(lines); j++ {
		l := lines[j]
		if strings.HasPrefix(l, "    ") {
			v := strings.TrimSpace(l)
			if m := typeRe.FindString(v); m != "" {
				v = strings.TrimSpace(v[len(m):])
				if v == "" && j+1 < len(lines) {
					// An error: its message is on the next line, then a
					// dump of its fields, which is left out.
					j++
					v = strings.TrimSpace(lines[j])
				}
				for j+1 < len(lines) && strings.HasPrefix(lines[j+1], "    ") && !typeRe.MatchString(strings.TrimSpace(lines[j+1])) {
					j++ // the rest of a dumped value
				}
				values = append(values, v)
			}
			continue
		}
		phrases = append(phrases, strings.TrimSpace(l))
	}
	first := func() string {
		if len(values) > 0 {
			return clipLine(values[0], 160)
		}
		return ""
	}
	switch {
	case strings.HasPrefix(head, "Expected an error to have occurred"):
		return "got no error"
	case strings.HasPrefix(head, "Unexpected error:"), strings.HasPrefix(head, "Expected success, but got an error:"):
		return "got the error " + quote(first())
	case head == "Expected" && len(values) >= 1:
		phrase := strings.Join(phrases, " ")
		switch phrase {
		case "to be true", "to be false", "to be empty", "to be nil", "to be zero", "to be zero-valued":
			// The description says what held instead and lists it; the
			// matcher's dump of the value stays in the notes.
			return ""
		}
		s := "got " + first()
		if len(values) >= 2 {
			s += ", expected " + phrase + " " + clipLine(values[1], 160)
		} else if phrase != "" {
			s += ", expected " + phrase
		}
		return s
	}
	return clipLine(strings.Join(append([]string{head}, phrases...), " "), 200)
}

// gotValue is the value a "got X, expected ..." part quotes, "" for none.
func gotValue(got string) string {
	v, ok := strings.CutPrefix(got, "got ")
	if !ok || strings.HasPrefix(v, "no error") {
		return ""
	}
	if i := strings.Index(v, ", expected "); i >= 0 {
		v = v[:i]
	}
	v = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(v, "the error "), `"`), `"`)
	if len(v) < 4 {
		return "" // too short to be sure the description quotes it
	}
	return v
}

func quote(s string) string {
	if s == "" {
		return "(no message)"
	}
	return fmt.Sprintf("%q", s)
}

func clipLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// caller is the file:line of a failed assertion, for the notes: skip is the
// count Gomega hands its fail handler (the frames above the handler's
// caller to skip).
func caller(skip ...int) string {
	n := 0
	if len(skip) > 0 {
		n = skip[0]
	}
	if _, file, line, ok := runtime.Caller(n + 2); ok {
		return fmt.Sprintf("%s:%d", file, line)
	}
	return "an unknown place"
}
