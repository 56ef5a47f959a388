package redact

import (
	"errors"
	"strings"
	"testing"
)

func TestEveryCredentialForm(t *testing.T) {
	cases := []struct{ in, secret string }{
		{"postgres://kit:s3cr3t@127.0.0.1:5432/db", "s3cr3t"},
		{"nats://kit:pa%20ss@127.0.0.1:4222", "pa%20ss"},
		{"nats://T0KENabc@127.0.0.1:4222", "T0KENabc"},
		{"tls://T0KENabc@nats.example:4222", "T0KENabc"},
		{"redis://:redispw@127.0.0.1:6379/0", "redispw"},
		{"postgres://127.0.0.1/db?sslmode=disable&password=qpw", "qpw"},
		{"nats://127.0.0.1:4222?token=qtok", "qtok"},
		{"kafka://broker:9092?sasl_password=kpw", "kpw"},
		{"nats://127.0.0.1:4222?nkey=SUACSSL3UAHUDXKFSNVUZRF5UHPMWZ6BFDTJ7M6USDXIEDNPPQYYYCU3VY", "SUACSSL3UAHUDXKFSNVUZRF5UHPMWZ6BFDTJ7M6USDXIEDNPPQYYYCU3VY"},
		{"nats://127.0.0.1:4222?creds=/home/me/user.creds", "/home/me/user.creds"},
		// By structure: the userinfo runs to the last @, whatever it holds.
		{"postgres://user:p@ssRawAtPw@127.0.0.1:1/db", "p@ssRawAtPw"},
		{"postgres://user:pa/Secret@127.0.0.1:1/db", "pa/Secret"},
		{"postgres://user:x Secret@127.0.0.1:1/db", "x Secret"},
		{"postgres://user:a:b:Secret@127.0.0.1:1/db", "a:b:Secret"},
		{"postgres://user:pässwörtSecret@127.0.0.1:1/db", "pässwörtSecret"},
		{"nats://tok@en/Secret@127.0.0.1:4222", "tok@en/Secret"},
		{"user:Secret@127.0.0.1:5432", "Secret"},
		{"host=127.0.0.1 user=kit password='a Secret' dbname=x", "a Secret"},
		{`host=127.0.0.1 password="a \" Secret" dbname=x`, `a \" Secret`},
	}
	for _, c := range cases {
		out := Text("connecting to " + c.in + " failed")
		if strings.Contains(out, c.secret) || strings.Contains(out, "Secret") || strings.Contains(out, "RawAt") {
			t.Errorf("Text(%q) = %q: the secret is still there", c.in, out)
		}
		err := Error(errors.New("dial "+c.in+": driver said "+c.secret), Secrets(c.in)...)
		if strings.Contains(err.Error(), c.secret) {
			t.Errorf("Error for %q = %q: the secret is still there", c.in, err)
		}
	}
	for in, want := range map[string]string{
		"postgres://user:p@ss@h:1/db: dial tcp 127.0.0.1:1: refused": "postgres://user:xxxxx@h:1/db: dial tcp 127.0.0.1:1: refused",
		`target "broker/nats=user:Secret@host"`:                      `target "broker/nats=user:xxxxx@host"`,
		"password='a Secret' dbname=x":                               "password=xxxxx dbname=x",
		"dial tcp 127.0.0.1:4222: refused":                           "dial tcp 127.0.0.1:4222: refused",
		// A usage hint's placeholder is kept as written (issue 35).
		`not a Redis URL (want redis://[user:password@]host:port/db): redis: invalid database number: "x"`: `not a Redis URL (want redis://[user:password@]host:port/db): redis: invalid database number: "x"`,
		"want nats://[token@]host:port": "want nats://[token@]host:port",
		"redis://[user:Secret@]host":    "redis://[user:xxxxx@]host",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
	// A secret after a placeholder is still masked.
	for _, in := range []string{
		`(want redis://[user:password@]host:port/db): parse "u:Secret@127.0.0.1:1/0": bad`,
		`(want redis://[user:password@]host:port/db): parse "redis://u:Secret@127.0.0.1:1/0": bad`,
		`(want redis://[user:password@]host:port/db): u:Secret@127.0.0.1`,
	} {
		if got := Text(in); strings.Contains(got, "Secret") || !strings.Contains(got, "[user:password@]") {
			t.Errorf("Text(%q) = %q: want the placeholder kept and the secret masked", in, got)
		}
	}
	if got := Opaque("user:x Secret@host"); got != "user:xxxxx" {
		t.Errorf("Opaque = %q", got)
	}
	// A user name alone is not a secret where it is a user name.
	if got := Text("postgres://kit@127.0.0.1/db"); got != "postgres://kit@127.0.0.1/db" {
		t.Errorf("a lone postgres user was masked: %q", got)
	}
}

func TestErrorKeepsTheChain(t *testing.T) {
	base := errors.New("x")
	if !errors.Is(Error(base, "s"), base) {
		t.Fatal("errors.Is lost through Error")
	}
}
