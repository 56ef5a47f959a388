package apidesc

import (
	"fmt"
	"net/url"
	"strings"
)

// Bounds on what a description puts into a request, checked at load time:
// a name or a path the HTTP client would refuse (a CR or LF in a header
// name) or a server could not take (a 900 KB header) is a description
// error (exit 3 naming the field), never a service that "does not answer".
const (
	// MaxNameBytes bounds a header, query or body field name: servers
	// commonly take 8 KB of headers in all.
	MaxNameBytes = 256
	// MaxPathBytes bounds a path template: servers commonly take 8 KB for
	// the request line, and the kit's ids and scopes go into it too.
	MaxPathBytes = 2048
)

// checkRequest checks the names and paths a request is built from.
func (d *Description) checkRequest(dec decoded) error {
	errf := func(field, format string, args ...any) error {
		return &Error{File: dec.file, Line: dec.line(field), Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	paths := []struct{ field, path string }{{"create.path", d.Create.Path}, {"read.path", d.Read.Path}}
	if d.List != nil {
		paths = append(paths, struct{ field, path string }{"list.path", d.List.Path})
	}
	for _, p := range paths {
		if len(p.path) > MaxPathBytes {
			return errf(p.field, "%d bytes, more than %d, the longest path the kit sends", len(p.path), MaxPathBytes)
		}
		if i := strings.IndexFunc(p.path, badInURL); i >= 0 {
			return errf(p.field, "holds %q at byte %d: a request path holds no space or control character (percent-encode it)", p.path[i:i+1], i)
		}
		if _, err := url.Parse("http://host" + strings.NewReplacer("{id}", "x", "{scope}", "x").Replace(p.path)); err != nil {
			return errf(p.field, "not a request path: %v", err)
		}
	}
	places := []struct {
		field string
		p     Place
	}{{"create.id", d.Create.ID}}
	if d.Scope != nil {
		places = append(places, struct {
			field string
			p     Place
		}{"scope", *d.Scope})
	}
	for _, pl := range places {
		field, name := pl.field+".name", pl.p.Name
		if len(name) > MaxNameBytes {
			return errf(field, "%d bytes, more than %d, the longest %s name the kit sends", len(name), MaxNameBytes, pl.p.In)
		}
		switch pl.p.In {
		case InHeader:
			if i := strings.IndexFunc(name, func(r rune) bool { return !isTokenChar(r) }); i >= 0 {
				return errf(field, "%s is not a header name: %q at byte %d (a header name is letters, digits and !#$%%&'*+-.^_`|~)", clip(name), name[i:i+1], i)
			}
		case InQuery, InBody:
			if i := strings.IndexFunc(name, isControl); i >= 0 {
				return errf(field, "holds the control character %q at byte %d", name[i:i+1], i)
			}
		}
	}
	return nil
}

// isTokenChar is an RFC 9110 tchar: what a header name is made of.
func isTokenChar(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f }

func badInURL(r rune) bool { return r == ' ' || isControl(r) }

// clip quotes a name for a message, shortened.
func clip(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%q…", s[:40])
	}
	return fmt.Sprintf("%q", s)
}
