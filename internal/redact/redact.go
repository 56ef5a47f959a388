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
	userinfoRe = regexp.MustCompile(`(?i)([a-z][a-z0-9+.-]*://)([^@/\s]*)@`)
	paramRe    = regexp.MustCompile(`(?i)((?:password|passwd|pass|pwd|token|secret|nkey|seed|creds|jwt|sasl_password|api_key|apikey)=)[^&\s]*`)
)

// tokenSchemes are the URL schemes whose lone user part is a secret: NATS
// reads nats://TOKEN@host as a token, not as a user name.
var tokenSchemes = map[string]bool{"nats://": true, "tls://": true, "ws://": true, "wss://": true}

// Text removes secrets from a URL or from any text holding URLs.
func Text(s string) string {
	s = userinfoRe.ReplaceAllStringFunc(s, func(m string) string {
		sub := userinfoRe.FindStringSubmatch(m)
		user, _, hasPw := strings.Cut(sub[2], ":")
		if !hasPw {
			if tokenSchemes[strings.ToLower(sub[1])] && sub[2] != "" {
				return sub[1] + Mask + "@"
			}
			return m
		}
		if u, err := url.PathUnescape(user); err == nil {
			user = u
		}
		return sub[1] + user + ":" + Mask + "@"
	})
	return paramRe.ReplaceAllString(s, "${1}"+Mask)
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
	u, err := url.Parse(addr)
	if err != nil {
		return nil
	}
	var out []string
	if u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			out = append(out, p)
			// The escaped spelling too: a driver may echo either.
			if _, raw, _ := strings.Cut(u.User.String(), ":"); raw != p {
				out = append(out, raw)
			}
		} else if tokenSchemes[strings.ToLower(u.Scheme)+"://"] && u.User.Username() != "" {
			out = append(out, u.User.Username())
		}
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
