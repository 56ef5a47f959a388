package safetext

import (
	"bytes"
	"testing"
)

func TestEscapesControls(t *testing.T) {
	for in, want := range map[string]string{
		"\x1b]0;title\x07all rules passed":         `\x1b]0;title\x07all rules passed`,
		"\x1b[2Jcleared":                           `\x1b[2Jcleared`,
		"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\": `\x1b]8;;http://x\x1b\link\x1b]8;;\x1b\`,
		"a\nb\tc\r":       `a\x0ab\x09c\x0d`,
		"c1 \u009b31m":    `c1 \x9b31m`,
		"bidi \u202eevil": `bidi \u202eevil`,
		"bad \xff utf8":   `bad \xff utf8`,
		"plain 日本語 text":  "plain 日本語 text",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Lines("line 1\n\tline 2\x1b[2J\n"); got != "line 1\n\tline 2\\x1b[2J\n" {
		t.Errorf("Lines = %q", got)
	}
}

func TestWriterHoldsSplitRunes(t *testing.T) {
	var b bytes.Buffer
	w := Writer(&b)
	s := []byte("日本\x1b[2J語\n")
	for i := range s {
		w.Write(s[i : i+1])
	}
	if got := b.String(); got != "日本\\x1b[2J語\n" {
		t.Errorf("got %q", got)
	}
}
