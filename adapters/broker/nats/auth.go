package nats

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"

	natsgo "github.com/nats-io/nats.go"
)

// This file is how the kit presents itself to a server that requires more
// than user and password: TLS with the run's material, and the credentials
// NATS accounts use in production, named in the URL as nats-server's own
// tools name them (docs/tls.md):
//
//	tls://host:4222?creds=FILE   a credentials file (user JWT + nkey seed), nats.go UserCredentials
//	nats://host:4222?nkey=FILE   a file holding a user nkey seed (SU...), nats.go NkeyOptionFromSeed
//
// Only the paths may be shown; the seed and the JWT never leave the files.

// authParams are the URL parameters the kit reads and removes before the
// URL reaches nats.go.
var authParams = []string{"creds", "nkey"}

// looksLikeSeed matches a bare user seed given where a file is wanted.
var looksLikeSeed = regexp.MustCompile(`^SU[A-Z2-7]{50,}$`)

// clientAuth splits the kit's parameters off raw and turns them and the
// TLS material into nats.go options. Its errors name the parameter and the
// file, never a byte of either file.
func clientAuth(raw string, cfg *tls.Config) (string, []natsgo.Option, error) {
	var opts []natsgo.Option
	if cfg != nil {
		// The config alone, not Secure: nats.go uses it where TLS is asked
		// for (tls://, or a server whose INFO requires it), so one run's
		// material does not force TLS on a plain nats:// server beside it.
		// nats.go verifies the URL's host unless ServerName is set.
		tc := cfg.Clone()
		opts = append(opts, func(o *natsgo.Options) error { o.TLSConfig = tc; return nil })
	}
	if !strings.Contains(raw, "?") || strings.Contains(raw, ",") {
		return raw, opts, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return raw, opts, nil // nats.go says what is wrong with it
	}
	q := u.Query()
	creds, nkey := q.Get("creds"), q.Get("nkey")
	if creds == "" && nkey == "" {
		return raw, opts, nil
	}
	if creds != "" && nkey != "" {
		return "", nil, errors.New("the URL names both ?creds= and ?nkey=; give one")
	}
	for _, p := range authParams {
		q.Del(p)
	}
	u.RawQuery = q.Encode()
	clean := u.String()
	switch {
	case creds != "":
		if err := checkFile("creds", creds, []byte("-----BEGIN NATS USER JWT-----"), "a NATS credentials file (user JWT and nkey seed, as nsc writes it)"); err != nil {
			return "", nil, err
		}
		opts = append(opts, natsgo.UserCredentials(creds))
	default:
		if err := checkFile("nkey", nkey, []byte("SU"), "a user nkey seed (SU...)"); err != nil {
			return "", nil, err
		}
		o, err := natsgo.NkeyOptionFromSeed(nkey)
		if err != nil {
			return "", nil, fmt.Errorf("?nkey=%s: the file holds no valid user nkey seed", nkey)
		}
		opts = append(opts, o)
	}
	return clean, opts, nil
}

// checkFile refuses a file that is missing or plainly not what is wanted,
// before nats.go reads it, so the error is the kit's own and shows no
// content.
func checkFile(param, file string, marker []byte, what string) error {
	if looksLikeSeed.MatchString(file) {
		return fmt.Errorf("?%s= takes the path of a file, not the seed itself", param)
	}
	fi, err := os.Stat(file)
	switch {
	case err != nil:
		return fmt.Errorf("?%s=%s: no such file or not readable", param, file)
	case !fi.Mode().IsRegular() || fi.Size() > 1<<20:
		return fmt.Errorf("?%s=%s: not a regular file of at most 1 MiB", param, file)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("?%s=%s: cannot be read", param, file)
	}
	if !bytes.Contains(data, marker) {
		return fmt.Errorf("?%s=%s: is not %s", param, file, what)
	}
	return nil
}
