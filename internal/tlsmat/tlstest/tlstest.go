// Package tlstest makes the certificates the kit's TLS tests need, in Go
// (crypto/x509, ECDSA P-256): a CA, a server certificate for 127.0.0.1 and
// localhost, and a client certificate, written as PEM files into a folder.
// Nothing is fetched and no openssl is needed.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is one CA and the certificates it signed, as files.
type PKI struct {
	CA         string // the CA's certificate
	ServerCert string // 127.0.0.1 and localhost
	ServerKey  string
	ClientCert string // a client certificate (CN onceproof-client)
	ClientKey  string

	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
}

// New makes a CA named name and its server and client certificates in
// dir; file names start with name.
func New(t testing.TB, dir, name string) *PKI {
	t.Helper()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name + " test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	p := &PKI{ca: ca, caKey: caKey, CA: filepath.Join(dir, name+"-ca.pem")}
	writePEM(t, p.CA, "CERTIFICATE", der)
	p.ServerCert, p.ServerKey = p.issue(t, dir, name+"-server", x509.ExtKeyUsageServerAuth, false)
	p.ClientCert, p.ClientKey = p.issue(t, dir, name+"-client", x509.ExtKeyUsageClientAuth, false)
	return p
}

// ExpiredServer issues a server certificate of this CA that expired an
// hour ago and returns a server configuration with it.
func (p *PKI) ExpiredServer(t testing.TB, dir string) *tls.Config {
	t.Helper()
	cert, key := p.issue(t, dir, "expired-server", x509.ExtKeyUsageServerAuth, true)
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
}

func (p *PKI) issue(t testing.TB, dir, name string, usage x509.ExtKeyUsage, expired bool) (certFile, keyFile string) {
	t.Helper()
	key := newKey(t)
	notBefore, notAfter := time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	if expired {
		notBefore, notAfter = time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: "onceproof-" + name},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", keyDER)
	return certFile, keyFile
}

// ServerConfig is a server's TLS configuration with this PKI's server
// certificate; with verify, it requires a client certificate signed by
// this CA.
func (p *PKI) ServerConfig(t testing.TB, verify bool) *tls.Config {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(p.ServerCert, p.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if verify {
		pool := x509.NewCertPool()
		pool.AddCert(p.ca)
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg
}

// KeyBytes is the PEM of a key file, for a test that greps outputs for it.
func KeyBytes(t testing.TB, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM", file)
	}
	return blk.Bytes
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func writePEM(t testing.TB, file, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
