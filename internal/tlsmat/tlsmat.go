// Package tlsmat turns the trust material a user names (a CA file, a client
// certificate and its key, a server name) into a *tls.Config for the kit's
// clients. A file that cannot be used is one line naming the flag and the
// file; no message ever holds a byte of a key (only paths are shown).
package tlsmat

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// maxFile bounds a PEM file the kit reads: a CA bundle is kilobytes.
const maxFile = 1 << 20

// Material is the trust material of a run (tck run --tls-ca, --tls-cert,
// --tls-key, --tls-server-name): file paths and a name, never the secrets
// themselves, so it may be shown or logged.
type Material struct {
	CA         string // PEM file of the CAs to trust ("" : the system's)
	Cert       string // PEM file of the client certificate (with Key)
	Key        string // PEM file of the client certificate's private key
	ServerName string // the name to verify the server's certificate against ("" : the URL's host)
	// Origin is the file that named the material (a profile, an api
	// description), "" for the flags: errors name it and its tls field.
	Origin string
}

// Empty reports whether no material was given.
func (m Material) Empty() bool {
	return m.CA == "" && m.Cert == "" && m.Key == "" && m.ServerName == ""
}

// Files is the material as a file names it (a profile's or an api
// description's tls section): paths relative to that file.
type Files struct {
	CA         string `yaml:"ca" json:"ca,omitempty"`
	Cert       string `yaml:"cert" json:"cert,omitempty"`
	Key        string `yaml:"key" json:"key,omitempty"`
	ServerName string `yaml:"serverName" json:"serverName,omitempty"`
}

// Material is f's material, its relative paths taken from the folder of
// origin, the file that names it.
func (f Files) Material(origin string) Material {
	dir := filepath.Dir(origin)
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	return Material{CA: abs(f.CA), Cert: abs(f.Cert), Key: abs(f.Key), ServerName: f.ServerName, Origin: origin}
}

// Error is a material file that cannot be used: the flag, the file and why.
type Error struct {
	Flag, File, Why string
	// Origin is the file that named the material ("" : the flags).
	Origin string
}

func (e *Error) Error() string {
	name := "--" + e.Flag
	if e.Origin != "" {
		name = e.Origin + ": tls." + strings.TrimPrefix(e.Flag, "tls-")
	}
	if e.File == "" {
		return fmt.Sprintf("%s: %s", name, e.Why)
	}
	return fmt.Sprintf("%s %s: %s", name, e.File, e.Why)
}

// Config builds the client configuration; nil without material (the
// client's own defaults). Every call reads the files again, so a check at
// parse time and the target's start see the same thing.
func (m Material) Config() (*tls.Config, error) {
	cfg, err := m.config()
	var e *Error
	if errors.As(err, &e) && m.Origin != "" {
		e.Origin = m.Origin
	}
	return cfg, err
}

func (m Material) config() (*tls.Config, error) {
	if m.Empty() {
		return nil, nil
	}
	if (m.Cert == "") != (m.Key == "") {
		return nil, &Error{Flag: "tls-cert", Why: "a client certificate needs both --tls-cert and --tls-key"}
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: m.ServerName}
	if m.CA != "" {
		data, err := readPEM("tls-ca", m.CA)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, &Error{Flag: "tls-ca", File: m.CA, Why: "holds no PEM certificate"}
		}
		cfg.RootCAs = pool
	}
	if m.Cert != "" {
		certPEM, err := readPEM("tls-cert", m.Cert)
		if err != nil {
			return nil, err
		}
		keyPEM, err := readPEM("tls-key", m.Key)
		if err != nil {
			return nil, err
		}
		if !hasBlock(certPEM, "CERTIFICATE") {
			return nil, &Error{Flag: "tls-cert", File: m.Cert, Why: "holds no PEM certificate"}
		}
		if !hasKey(keyPEM) {
			return nil, &Error{Flag: "tls-key", File: m.Key, Why: "holds no PEM private key"}
		}
		// X509KeyPair's own error never quotes the key, but it is replaced
		// by the kit's words all the same: only the paths are shown.
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, &Error{Flag: "tls-key", File: m.Key, Why: "is not the private key of the certificate in " + m.Cert + " (or is encrypted or malformed)"}
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// Check loads the material once to refuse an unusable file before anything
// starts (a usage error).
func (m Material) Check() error {
	_, err := m.Config()
	return err
}

func readPEM(flag, file string) ([]byte, error) {
	fi, err := os.Stat(file)
	switch {
	case os.IsNotExist(err):
		return nil, &Error{Flag: flag, File: file, Why: "no such file"}
	case err != nil:
		return nil, &Error{Flag: flag, File: file, Why: "cannot be read"}
	case !fi.Mode().IsRegular():
		return nil, &Error{Flag: flag, File: file, Why: "is not a regular file"}
	case fi.Size() > maxFile:
		return nil, &Error{Flag: flag, File: file, Why: "is larger than 1 MiB: not a PEM file"}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, &Error{Flag: flag, File: file, Why: "cannot be read"}
	}
	return data, nil
}

func hasBlock(data []byte, typ string) bool {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return false
		}
		if b.Type == typ {
			return true
		}
	}
}

func hasKey(data []byte) bool {
	for _, t := range []string{"PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY", "ENCRYPTED PRIVATE KEY"} {
		if hasBlock(data, t) {
			return true
		}
	}
	return false
}
