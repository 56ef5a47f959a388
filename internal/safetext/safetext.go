// Package safetext keeps control characters that came from outside the kit
// (a target's error, a profile's name, a results.json) off the user's
// terminal and out of the kit's documents: an ESC sequence could clear the
// screen, retitle the window, forge a line or hide a link. Every C0 and C1
// control, DEL, a bidirectional override and an invalid UTF-8 byte is shown
// as a visible escape (\x1b, \u202e) instead; nothing is dropped silently.
package safetext

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// unsafe reports whether r must not reach a terminal or a document raw.
func unsafe(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // bidirectional controls: text that reads other than it is
	}
	return false
}

func escape(b *strings.Builder, r rune) {
	if r < 0x100 {
		fmt.Fprintf(b, `\x%02x`, r)
	} else {
		fmt.Fprintf(b, `\u%04x`, r)
	}
}

// Text makes one field safe: every control character escaped, newlines
// and tabs too, so it stays on its line.
func Text(s string) string { return clean(s, false) }

// Lines makes a whole document or output safe: as Text, but newlines and
// tabs (the document's own layout) are kept.
func Lines(s string) string { return clean(s, true) }

func clean(s string, keepLayout bool) string {
	ok := true
	for _, r := range s {
		if r == utf8.RuneError || unsafe(r) && !(keepLayout && (r == '\n' || r == '\t')) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLayout && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case unsafe(r):
			escape(&b, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Writer returns w with Lines applied to everything written through it
// (the CLI's stdout and stderr). A rune split across two writes is held
// until the rest arrives.
func Writer(w io.Writer) io.Writer { return &writer{w: w} }

type writer struct {
	w     io.Writer
	carry []byte
}

func (x *writer) Write(p []byte) (int, error) {
	data := append(x.carry, p...)
	x.carry = nil
	// Hold back an incomplete rune at the end (at most 3 bytes).
	for k := 1; k <= 3 && k <= len(data); k++ {
		if c := data[len(data)-k]; c >= 0xc0 { // a lead byte
			if len(data)-k+utf8RuneLen(c) > len(data) {
				x.carry = append([]byte(nil), data[len(data)-k:]...)
				data = data[:len(data)-k]
			}
			break
		} else if c < 0x80 {
			break
		}
	}
	if _, err := io.WriteString(x.w, Lines(string(data))); err != nil {
		return 0, err
	}
	return len(p), nil
}

func utf8RuneLen(lead byte) int {
	switch {
	case lead >= 0xf0:
		return 4
	case lead >= 0xe0:
		return 3
	}
	return 2
}
