package apiservice

import (
	"bytes"
	"net"
	"strconv"
	"strings"
)

// exactNames is CaseSensitiveHeader's listener: an API gateway or a
// hand-written parser in front of the service that looks a header up by
// its exact name. net/http canonicalizes every name it parses, so the
// defect lives below it: each connection's bytes pass through a filter
// that drops a header line whose name is one of names in another casing
// ("idempotency-key: K" for "Idempotency-Key"), before net/http reads it.
// The service then sees a request without that header.
type exactNames struct {
	net.Listener
	names []string
}

func (l exactNames) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &exactConn{Conn: c, names: l.names}, nil
}

// exactConn filters the requests read from one connection. It follows the
// framing of HTTP/1.1 only as far as the kit's requests need: a head is
// lines up to a blank one, its body Content-Length bytes; from a chunked
// body on it stops filtering and passes the rest through.
type exactConn struct {
	net.Conn
	names []string

	in      [4096]byte
	out     []byte // filtered bytes not yet read
	line    []byte // a head line read in part
	started bool   // the head's request line has been read
	length  int64  // the head's Content-Length (-1: a chunked body)
	body    int64  // body bytes still to pass through
	raw     bool   // stopped filtering
}

func (c *exactConn) Read(p []byte) (int, error) {
	for len(c.out) == 0 {
		n, err := c.Conn.Read(c.in[:])
		c.feed(c.in[:n])
		if err != nil && len(c.out) == 0 {
			// A deadline net/http sets to stop its background read is
			// one such error: what was read of a line stays in c.line.
			return 0, err
		}
	}
	n := copy(p, c.out)
	c.out = c.out[n:]
	return n, nil
}

func (c *exactConn) feed(b []byte) {
	for len(b) > 0 {
		if c.raw || c.body > 0 {
			n := len(b)
			if !c.raw {
				n = int(min(int64(n), c.body))
				c.body -= int64(n)
			}
			c.out = append(c.out, b[:n]...)
			b = b[n:]
			continue
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			c.line = append(c.line, b...)
			return
		}
		c.line = append(c.line, b[:i+1]...)
		b = b[i+1:]
		c.headLine(c.line)
		c.line = c.line[:0]
	}
}

// headLine passes one line of a request's head on, or drops it.
func (c *exactConn) headLine(line []byte) {
	text := strings.TrimRight(string(line), "\r\n")
	switch {
	case text == "" && !c.started:
		// Blank lines before a request line (RFC 9112 §2.2 lets a server
		// ignore them).
	case text == "":
		c.started, c.body, c.raw, c.length = false, max(c.length, 0), c.length < 0, 0
	case !c.started:
		c.started = true
	default:
		name, value, _ := strings.Cut(text, ":")
		for _, want := range c.names {
			if strings.EqualFold(name, want) && name != want {
				return // the defect: not the name it looks for
			}
		}
		value = strings.TrimSpace(value)
		switch {
		case strings.EqualFold(name, "Content-Length"):
			c.length, _ = strconv.ParseInt(value, 10, 64)
		case strings.EqualFold(name, "Transfer-Encoding"):
			c.length = -1 // chunked: the filter stops after this head
		}
	}
	c.out = append(c.out, line...)
}
