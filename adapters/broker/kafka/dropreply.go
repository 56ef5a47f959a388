package kafka

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceproof/tck/mq"
)

// This file loses a produce reply on any cluster, in the kit's own client:
// every connection of one producer session goes through a conn that frames
// the Kafka protocol (a 4-byte length, then the request's api key and
// correlation id, or the response's correlation id) and swallows the
// response to the first produce request written after the fault was armed.
// The broker has appended the batch; the client hears nothing, times out
// the request, and retries it on a new connection. Nothing is put between
// the cluster and anyone else's clients.

// produceKey is the Kafka api key of Produce.
const produceKey = 0

// ReplyDropper is a producer session whose next produce reply is lost.
type ReplyDropper struct {
	mu       sync.Mutex
	armed    bool
	requests int // produce requests written since armed
	dropped  int // produce responses swallowed
	p        *producer
	b        *Broker
	tls      *tls.Config // the target's TLS, under the framing (nil: plain)
}

// DropNextProduceReply opens a handle on opts' cluster with a producer
// session whose first produce reply is swallowed in the client. Its
// request timeout is short (1 s), so the retry comes quickly.
func DropNextProduceReply(ctx context.Context, opts Options) (*ReplyDropper, error) {
	d := &ReplyDropper{armed: true, tls: opts.TLS}
	opts.dial = d.dial
	opts.produceTimeout = time.Second
	b, err := Connect(ctx, opts)
	if err != nil {
		return nil, err
	}
	d.b, d.p = b, b.prod
	return d, nil
}

// Publish produces on the session.
func (d *ReplyDropper) Publish(ctx context.Context, topic string, m mq.Message) (mq.PublishAck, error) {
	return d.p.Publish(ctx, topic, m)
}

// Close ends the session and its handle.
func (d *ReplyDropper) Close() error { return d.b.Close() }

// Fired says whether a produce reply was swallowed.
func (d *ReplyDropper) Fired() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dropped > 0
}

// Seen describes the produce requests the session wrote since it was armed.
func (d *ReplyDropper) Seen() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for i := 0; i < d.requests; i++ {
		what := "produce request written by the kit's client"
		if i == 0 && d.dropped > 0 {
			what += "; its reply swallowed in the client"
		}
		out = append(out, what)
	}
	return out
}

// Remove disarms it.
func (d *ReplyDropper) Remove() {
	d.mu.Lock()
	d.armed = false
	d.mu.Unlock()
}

// wrote notes a produce request; true when its reply is to be dropped.
func (d *ReplyDropper) wrote() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.requests++
	if d.armed {
		d.armed = false
		return true
	}
	return false
}

func (d *ReplyDropper) swallowed() {
	d.mu.Lock()
	d.dropped++
	d.mu.Unlock()
}

func (d *ReplyDropper) dial(ctx context.Context, network, host string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	if d.tls != nil {
		// The framing reads the protocol, so TLS goes beneath it, as
		// kgo's own DialTLSConfig would do it (the host as the name).
		cfg := d.tls.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(host)
		}
		tc := tls.Client(c, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = c.Close()
			return nil, err
		}
		c = tc
	}
	return &dropConn{Conn: c, d: d, drop: map[int32]bool{}}, nil
}

// dropConn frames both directions of one connection.
type dropConn struct {
	net.Conn
	d *ReplyDropper

	wmu  sync.Mutex
	wrem int // bytes of the current request still to be written

	mu   sync.Mutex
	drop map[int32]bool // correlation ids whose response is swallowed
	rbuf []byte         // read, not yet a whole frame
	out  []byte         // whole frames for the reader
}

func (c *dropConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	if c.wrem == 0 && len(p) >= 12 {
		// p begins a request: length, api key, api version, correlation id.
		c.wrem = 4 + int(binary.BigEndian.Uint32(p[:4]))
		if int16(binary.BigEndian.Uint16(p[4:6])) == produceKey && c.d.wrote() {
			c.mu.Lock()
			c.drop[int32(binary.BigEndian.Uint32(p[8:12]))] = true
			c.mu.Unlock()
		}
	}
	n, err := c.Conn.Write(p)
	c.wrem = max(c.wrem-n, 0)
	c.wmu.Unlock()
	return n, err
}

func (c *dropConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	buf := make([]byte, 32<<10)
	for len(c.out) == 0 {
		c.mu.Unlock()
		n, err := c.Conn.Read(buf)
		c.mu.Lock()
		c.rbuf = append(c.rbuf, buf[:n]...)
		for len(c.rbuf) >= 8 {
			l := 4 + int(binary.BigEndian.Uint32(c.rbuf[:4]))
			if len(c.rbuf) < l {
				break
			}
			if corr := int32(binary.BigEndian.Uint32(c.rbuf[4:8])); c.drop[corr] {
				delete(c.drop, corr)
				c.d.swallowed()
			} else {
				c.out = append(c.out, c.rbuf[:l]...)
			}
			c.rbuf = c.rbuf[l:]
		}
		if err != nil && len(c.out) == 0 {
			return 0, err
		}
	}
	n := copy(p, c.out)
	c.out = c.out[n:]
	return n, nil
}

// dialOpts are the client options of a dialer and a produce timeout, when
// set.
func (o Options) dialOpts() []kgo.Opt {
	var out []kgo.Opt
	switch {
	case o.dial != nil:
		// kgo takes a Dialer or a TLS config, not both: the kit's dialer
		// does the TLS itself, below its framing (ReplyDropper.dial).
		out = append(out, kgo.Dialer(o.dial))
	case o.TLS != nil:
		out = append(out, kgo.DialTLSConfig(o.TLS.Clone()))
	}
	if o.produceTimeout > 0 {
		out = append(out, kgo.ProduceRequestTimeout(o.produceTimeout), kgo.RequestTimeoutOverhead(o.produceTimeout))
	}
	return out
}
