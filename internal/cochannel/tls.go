package cochannel

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

// A consumer service reaches a TLS broker through the kit's proxy: the
// proxy reads the service's frames, so it speaks TLS to the broker (with
// the run's material) and plain text to the service, on loopback, where
// only the service's process reaches it. The service is given a plain URL
// (nats://, redis://) with the broker's credentials and the proxy's
// address, which any client library takes without trust material of its
// own: a service never needs the kit's CA or client certificate.

// dialTimeout bounds one connection to the broker, its handshake included.
const dialTimeout = 5 * time.Second

// tlsDial opens a TLS connection to target with cfg (cloned: the server
// name, when cfg names none, is target's host).
func tlsDial(cfg *tls.Config) func(string) (net.Conn, error) {
	return func(target string) (net.Conn, error) {
		raw, err := net.DialTimeout("tcp", target, dialTimeout)
		if err != nil {
			return nil, err
		}
		return handshake(raw, target, cfg)
	}
}

func handshake(raw net.Conn, target string, cfg *tls.Config) (net.Conn, error) {
	c := cfg.Clone()
	if c.ServerName == "" {
		c.ServerName, _, _ = net.SplitHostPort(target)
	}
	_ = raw.SetDeadline(time.Now().Add(dialTimeout))
	tc := tls.Client(raw, c)
	if err := tc.Handshake(); err != nil {
		_ = raw.Close()
		return nil, err
	}
	_ = raw.SetDeadline(time.Time{})
	return tc, nil
}

// natsTLSDial opens a connection to a NATS server that takes TLS: NATS
// starts in plain text with the server's INFO, then the client upgrades.
// The proxy upgrades itself and hands the service the INFO without
// tls_required, so the service stays plain on its side; the INFO is the
// first thing the service reads.
func natsTLSDial(cfg *tls.Config, always bool) func(string) (net.Conn, error) {
	return func(target string) (net.Conn, error) {
		raw, err := net.DialTimeout("tcp", target, dialTimeout)
		if err != nil {
			return nil, err
		}
		_ = raw.SetDeadline(time.Now().Add(dialTimeout))
		line, err := readLine(raw, 64<<10)
		if err != nil {
			_ = raw.Close()
			return nil, fmt.Errorf("reading the server's INFO: %w", err)
		}
		_ = raw.SetDeadline(time.Time{})
		info, required, err := plainInfo(line)
		if err != nil {
			_ = raw.Close()
			return nil, err
		}
		if !required && !always {
			return &prefixConn{Conn: raw, pre: line}, nil // a plain server
		}
		tc, err := handshake(raw, target, cfg)
		if err != nil {
			return nil, err
		}
		return &prefixConn{Conn: tc, pre: info}, nil
	}
}

// readLine reads one CRLF-ended line, byte by byte: nothing after it is
// the proxy's to read.
func readLine(c net.Conn, limit int) ([]byte, error) {
	var line []byte
	b := make([]byte, 1)
	for len(line) < limit {
		if _, err := c.Read(b); err != nil {
			return nil, err
		}
		line = append(line, b[0])
		if bytes.HasSuffix(line, []byte("\r\n")) {
			return line, nil
		}
	}
	return nil, errors.New("no end of line")
}

// plainInfo is the INFO line as the service must see it (no TLS asked),
// and whether the server requires TLS.
func plainInfo(line []byte) ([]byte, bool, error) {
	body, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("INFO "))
	if !ok {
		return nil, false, errors.New("the server did not start with INFO: not a NATS server")
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, false, fmt.Errorf("the server's INFO: %w", err)
	}
	required, _ := m["tls_required"].(bool)
	for _, k := range []string{"tls_required", "tls_verify", "tls_available"} {
		delete(m, k)
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil, false, err
	}
	return append(append([]byte("INFO "), out...), '\r', '\n'), required, nil
}

// prefixConn reads pre before the connection's own bytes.
type prefixConn struct {
	net.Conn
	pre []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.pre) > 0 {
		n := copy(b, p.pre)
		p.pre = p.pre[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}
