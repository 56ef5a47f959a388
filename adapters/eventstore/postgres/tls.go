package postgres

import (
	"net/url"
	"strings"
)

// WithMaterial adds the run's trust material (tck run --tls-ca, --tls-cert,
// --tls-key; docs/tls.md) to a DSN as libpq's own parameters, so pgx builds
// the TLS configuration exactly as for a DSN that named them: sslrootcert,
// sslcert, sslkey, and sslmode=verify-full when the DSN names no sslmode
// (a CA given is a CA to verify with). A parameter the DSN already names
// wins. Only paths are added; pgx reads the files.
func WithMaterial(dsn, ca, cert, key string) string {
	add := []struct{ name, value string }{{"sslrootcert", ca}, {"sslcert", cert}, {"sslkey", key}}
	if ca == "" && cert == "" {
		return dsn
	}
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return dsn // pgx says what is wrong with it
		}
		q := u.Query()
		for _, a := range add {
			if a.value != "" && !q.Has(a.name) {
				q.Set(a.name, a.value)
			}
		}
		if !q.Has("sslmode") {
			q.Set("sslmode", "verify-full")
		}
		u.RawQuery = q.Encode()
		return u.String()
	}
	// A keyword/value DSN: quoted values, as libpq writes them.
	has := func(name string) bool {
		for _, f := range strings.Fields(dsn) {
			if strings.HasPrefix(f, name+"=") {
				return true
			}
		}
		return false
	}
	for _, a := range add {
		if a.value != "" && !has(a.name) {
			dsn += " " + a.name + "='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(a.value) + "'"
		}
	}
	if !has("sslmode") {
		dsn += " sslmode=verify-full"
	}
	return strings.TrimSpace(dsn)
}
