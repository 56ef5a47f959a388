package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/onceproof/tck/adapters/eventstore/postgres"
	"github.com/onceproof/tck/internal/tlsmat/tlstest"
)

// The material becomes libpq's parameters, which pgx turns into a TLS
// configuration that trusts the CA and presents the client certificate; a
// parameter the DSN names itself wins.
func TestWithMaterialReachesPgx(t *testing.T) {
	p := tlstest.New(t, t.TempDir(), "a")
	for _, dsn := range []string{
		"postgres://kit:pw@127.0.0.1:5432/tck",
		"host=127.0.0.1 port=5432 user=kit password=pw dbname=tck",
	} {
		got := postgres.WithMaterial(dsn, p.CA, p.ClientCert, p.ClientKey)
		cfg, err := pgx.ParseConfig(got)
		if err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		tc := cfg.TLSConfig
		if tc == nil || tc.RootCAs == nil || len(tc.Certificates) != 1 || tc.ServerName != "127.0.0.1" || tc.InsecureSkipVerify {
			t.Errorf("%s: pgx's TLS config does not verify with the CA and the client certificate: %+v", dsn, tc)
		}
		if len(cfg.Fallbacks) != 0 {
			t.Errorf("%s: verify-full must not fall back to plain text: %d fallbacks", dsn, len(cfg.Fallbacks))
		}
	}
	if got := postgres.WithMaterial("postgres://h/db?sslmode=disable", p.CA, "", ""); got != "postgres://h/db?sslmode=disable&sslrootcert="+urlEscape(p.CA) {
		t.Errorf("the DSN's own sslmode must win: %s", got)
	}
	if got := postgres.WithMaterial("postgres://h/db", "", "", ""); got != "postgres://h/db" {
		t.Errorf("no material changes nothing: %s", got)
	}
}

func urlEscape(s string) string {
	out := ""
	for _, r := range s {
		if r == '/' {
			out += "%2F"
		} else {
			out += string(r)
		}
	}
	return out
}
