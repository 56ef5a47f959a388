// Package redact keeps secrets out of every line and file the kit writes:
// the password of user:password@, a NATS token (nats://TOKEN@host), and
// password-like query parameters. Adapters use it on their drivers' errors;
// the CLI on every target address it prints.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces a secret.
const Mask = "xxxxx"

var (
	schemeRe = regexp.MustCompile(`(?i)[a-z][a-z0-9+.-]*://`)
	// A key=value secret: a quoted value to its closing quote (libpq's
	// password='a b\'c'), else to the next space or &.
	paramRe = regexp.MustCompile(`(?i)((?:password|passwd|pass|pwd|token|secret|nkey|seed|creds|jwt|sasl_password|api_key|apikey)=)(?:'(?:[^'\\]|\\.)*'?|"(?:[^"\\]|\\.)*"?|[^&\s]*)`)
	// The placeholder of a usage hint right after SCHEME://: [user:password@]
	// or [token@], the words themselves, in brackets (a real userinfo has no
	// brackets around it).
	placeholderRe = regexp.MustCompile(`^\[(?:(?:user|username):(?:password|pass|pw|token)|token|password)@\]`)
	// A word of text, for user:password@host written without a scheme.
	wordRe = regexp.MustCompile(`[^\s"'<>()\[\]{}=,;]+`)
)

// tokenSchemes are the URL schemes whose lone user part is a secret: NATS
// reads nats://TOKEN@host as a token, not as a user name.
var tokenSchemes = map[string]bool{"nats://": true, "tls://": true, "ws://": true, "wss://": true}

// Text removes secrets from a URL or from any text holding URLs. It goes
// by structure, not by what a password may hold: after SCHEME:// the
// userinfo runs to the last @ before the next URL or line end, so a raw
// @, /, : or space in a password is masked with the rest of it; the user
// name is the part before the first colon.
func Text(s string) string {
	var b strings.Builder
	locs := schemeRe.FindAllStringIndex(s, -1)
	prev := 0
	for i, loc := range locs {
		if loc[0] < prev {
			continue // inside the part already masked
		}
		end := len(s)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		if nl := strings.IndexAny(s[loc[1]:end], "\r\n"); nl >= 0 {
			end = loc[1] + nl
		}
		seg := s[loc[1]:end]
		at := strings.LastIndex(seg, "@")
		b.WriteString(s[prev:loc[1]])
		prev = loc[1]
		// A usage hint's optional userinfo (want redis://[user:password@]host)
		// is a placeholder, not a secret: kept as written. What follows it
		// is the hint's text, not a userinfo; a user:password@ in it is
		// masked as in any text without a scheme (bareWords).
		if at < 0 || placeholderRe.MatchString(seg) {
			continue
		}
		info := seg[:at]
		user, _, hasPw := strings.Cut(info, ":")
		switch {
		case hasPw:
			if u, err := url.PathUnescape(user); err == nil {
				user = u
			}
			b.WriteString(user + ":" + Mask + "@")
		case tokenSchemes[strings.ToLower(s[loc[0]:loc[1]])] && info != "":
			b.WriteString(Mask + "@")
		default:
			continue // a user name alone is not a secret
		}
		prev = loc[1] + at + 1
	}
	b.WriteString(s[prev:])
	s = bareWords(b.String())
	return paramRe.ReplaceAllString(s, "${1}"+Mask)
}

// bareWords masks user:password@host written without a scheme in every
// word of s but a usage hint's placeholder ([user:password@]).
func bareWords(s string) string {
	var b strings.Builder
	prev := 0
	for _, w := range wordRe.FindAllStringIndex(s, -1) {
		if w[0] > 0 && s[w[0]-1] == '[' && placeholderRe.MatchString(s[w[0]-1:]) {
			continue
		}
		b.WriteString(s[prev:w[0]])
		b.WriteString(bareUserinfo(s[w[0]:w[1]]))
		prev = w[1]
	}
	b.WriteString(s[prev:])
	return b.String()
}

// bareUserinfo masks user:password@host written without a scheme.
func bareUserinfo(w string) string {
	if strings.Contains(w, "://") {
		return w
	}
	at := strings.LastIndex(w, "@")
	if at < 0 {
		return w
	}
	user, pw, ok := strings.Cut(w[:at], ":")
	if !ok || user == "" || pw == "" || pw == Mask || strings.ContainsAny(user, "/@") {
		return w
	}
	return user + ":" + Mask + w[at:]
}

// Opaque masks an address that is neither a known form nor a URL, for the
// error that quotes it: it may be a credential written some other way, so
// only what comes before its first colon or @ is kept.
func Opaque(addr string) string {
	if i := strings.IndexAny(addr, ":@"); i >= 0 {
		return addr[:i] + addr[i:i+1] + Mask
	}
	return addr
}

// Error redacts the error's text and every given secret in it (a driver may
// quote a password without its URL), keeping the chain for errors.Is/As.
func Error(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := Text(err.Error())
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, Mask)
		}
	}
	return &redacted{msg: msg, err: err}
}

type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }

// Secrets returns the secrets an address carries (a password, a token, a
// password-like query value), so callers can scrub them from text that did
// not come through Text, such as a driver's own error message.
func Secrets(addr string) []string {
	var out []string
	if loc := schemeRe.FindStringIndex(addr); loc != nil && loc[0] == 0 {
		rest := addr[loc[1]:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			info := rest[:at]
			if _, raw, ok := strings.Cut(info, ":"); ok {
				if raw != "" {
					out = append(out, raw)
					// The unescaped spelling too: a driver may echo either.
					if p, err := url.PathUnescape(raw); err == nil && p != raw {
						out = append(out, p)
					}
				}
			} else if tokenSchemes[strings.ToLower(addr[:loc[1]])] && info != "" {
				out = append(out, info)
			}
		}
	}
	if !strings.Contains(addr, "://") {
		// A DSN (key=value ...) or a bare user:password@host.
		if w := bareUserinfo(addr); w != addr {
			_, rest, _ := strings.Cut(addr, ":")
			out = append(out, rest[:strings.LastIndex(rest, "@")])
		}
		for _, m := range paramRe.FindAllString(addr, -1) {
			_, v, _ := strings.Cut(m, "=")
			if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && v[len(v)-1] == v[0] {
				v = v[1 : len(v)-1]
			}
			if v != "" {
				out = append(out, v, strings.ReplaceAll(v, `\`, ""))
			}
		}
		return out
	}
	u, err := url.Parse(addr)
	if err != nil {
		return out
	}
	for k, vs := range u.Query() {
		if paramRe.MatchString(k + "=") {
			for _, v := range vs {
				if v != "" {
					out = append(out, v)
				}
			}
		}
	}
	return out
}
