package target

import (
	"errors"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	cases := map[string]string{
		"postgres://kit:s3cret@127.0.0.1:5432/db":            "postgres://kit:xxxxx@127.0.0.1:5432/db",
		"nats://u:p%40ss@host:4222":                          "nats://u:xxxxx@host:4222",
		"redis://:onlypw@127.0.0.1:6379/0":                   "redis://:xxxxx@127.0.0.1:6379/0",
		"nats://token-only@host:4222":                        "nats://xxxxx@host:4222", // a NATS token
		"postgres://h/db?user=kit&password=s3cret&sslmode=x": "postgres://h/db?user=kit&password=xxxxx&sslmode=x",
		"dial postgres://a:b@h failed; retry nats://c:d@h2":  "dial postgres://a:xxxxx@h failed; retry nats://c:xxxxx@h2",
		"embedded": "embedded",
	}
	for in, want := range cases {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParse(t *testing.T) {
	r, err := Parse("eventstore/postgres=postgres://u:pw@h:5432/db")
	if err != nil || r.Suite != "eventstore" || r.Name != "postgres" || r.Mode() != External {
		t.Fatalf("Parse: %+v %v", r, err)
	}
	if strings.Contains(r.String(), "pw@") {
		t.Errorf("String() leaks the password: %s", r)
	}
	for _, bad := range []string{"", "eventstore", "/x", "x/", "a/b/c", "eventstore/memory="} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	if _, err := Parse("a/b=postgres://u:topsecret@h"); err != nil {
		t.Fatal(err)
	}
	_, err = Parse("nonsense=postgres://u:topsecret@h")
	if err == nil || strings.Contains(err.Error(), "topsecret") {
		t.Errorf("Parse error leaks the password or is missing: %v", err)
	}
}

func TestUnavailableIsRedactedAndMatchable(t *testing.T) {
	ref, _ := Parse("eventstore/postgres=postgres://u:topsecret@h/db")
	err := Unavailable(ref, errors.New("connect postgres://u:topsecret@h/db: password authentication failed for topsecret"))
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("not ErrUnavailable: %v", err)
	}
	if strings.Contains(err.Error(), "topsecret") {
		t.Errorf("leaks the password: %v", err)
	}
}
