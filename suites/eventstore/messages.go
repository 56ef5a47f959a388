package eventstore

import (
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/onceproof/tck/es"
)

// A failed rule's reason is read by a person in a terminal: its first line
// says what the contract expects and what came back, with the es identifier,
// in plain words and under 200 characters. The rules draw ids of 256
// characters and more, so an id in a reason is abbreviated; the whole error
// goes to the evidence's notes.

// abbrevAt is the length past which an id in a reason is abbreviated.
const abbrevAt = 40

// abbrev shows an id longer than abbrevAt characters as its first
// characters and a short hash of the whole (two ids that differ only past
// their start stay told apart); a shorter one as it is.
func abbrev(id string) string {
	if utf8.RuneCountInString(id) <= abbrevAt {
		return id
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return string([]rune(id)[:12]) + "…#" + strconv.FormatUint(uint64(h.Sum32())&0xffffff, 16)
}

// abbrevText abbreviates every word of a message longer than abbrevAt
// characters: the ids an error quotes.
func abbrevText(s string) string {
	words := strings.Fields(s)
	for i, w := range words {
		words[i] = abbrev(w)
	}
	return strings.Join(words, " ")
}

// esName is the contract's name of an error: the typed conflict it carries
// (errors.As), the sentinel it matches (errors.Is), or its Go type.
func esName(err error) string {
	switch conflictName(err) {
	case "DuplicateRequestID":
		return "es.DuplicateRequestIDError"
	case "VersionConflict":
		return "es.VersionConflictError"
	case "DuplicateAggregateID":
		return "es.DuplicateAggregateIDError"
	}
	switch {
	case errors.Is(err, es.ErrConflict):
		return fmt.Sprintf("%T matching es.ErrConflict", err)
	case errors.Is(err, es.ErrInvalidArgument):
		return "es.ErrInvalidArgument"
	case errors.Is(err, es.ErrClosed):
		return "es.ErrClosed"
	}
	return fmt.Sprintf("%T", err)
}

// said is what came back from a call, for a reason: "no error", or the
// error's contract name (a typed conflict's alone) and its message with long
// ids abbreviated, cut to max characters. The whole error is on the rule's
// timeline (the fixture records every call's answer).
func said(err error, max int) string {
	if err == nil {
		return "no error"
	}
	if conflictName(err) != "error" {
		return esName(err) // the type says it all; its message quotes the long ids
	}
	s := esName(err) + " " + strconv.Quote(abbrevText(err.Error()))
	if utf8.RuneCountInString(s) > max {
		s = string([]rune(s)[:max]) + "…"
	}
	return s
}

// otherErrors lists the errors of a trial that were neither a success nor
// the conflict its rule expects, each with its contract name (an error
// hidden behind a count says nothing), the ids in them abbreviated.
func otherErrors(attempts []attempt, kind string) string {
	seen := map[string]int{}
	for _, a := range attempts {
		if a.err != nil && conflictName(a.err) != kind {
			seen[esName(a.err)+" "+strconv.Quote(abbrevText(a.err.Error()))]++
		}
	}
	var out []string
	for s, n := range seen {
		if n > 1 {
			s = fmt.Sprintf("%d× %s", n, s)
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}
