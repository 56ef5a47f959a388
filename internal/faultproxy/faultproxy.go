// Package faultproxy is a TCP proxy on loopback that sits between a client
// and a broker and injects faults: drop the broker's reply to one chosen
// request (seed 002's "publish ack lost"), cut every connection, or delay
// the broker-to-client direction.
//
// The client-to-broker direction is copied untouched. The broker-to-client
// direction is cut into protocol frames by a Splitter so that a fault hits
// exactly one reply and leaves the stream well-formed around it.
package faultproxy

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// Splitter returns the length of the first complete protocol frame in buf,
// or 0 when buf does not yet hold a whole frame.
type Splitter func(buf []byte) int

// Match picks a frame.
type Match func(frame []byte) bool

// Proxy forwards loopback connections to one address.
type Proxy struct {
	ln     net.Listener
	target string
	split  Splitter

	mu    sync.Mutex
	drops []*drop
	delay time.Duration
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

type drop struct {
	match Match
	done  chan []byte
}

// Start listens on 127.0.0.1 on a free port and forwards to target. split
// may be nil, in which case replies cannot be dropped one by one.
func Start(target string, split Splitter) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, split: split, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is host:port of the proxy.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// DropNext arms the proxy to swallow the next broker-to-client frame that m
// matches. The returned channel receives that frame once it was dropped.
func (p *Proxy) DropNext(m Match) <-chan []byte {
	d := &drop{match: m, done: make(chan []byte, 1)}
	p.mu.Lock()
	p.drops = append(p.drops, d)
	p.mu.Unlock()
	return d.done
}

// Disarm forgets every drop armed and not yet done: a drop whose frame
// never came must not swallow a later one.
func (p *Proxy) Disarm() {
	p.mu.Lock()
	p.drops = nil
	p.mu.Unlock()
}

// Delay holds every broker-to-client frame back by d (0 turns it off).
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Cut closes every open connection, both ways, as a network failure would.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

// Close stops listening and cuts every connection.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.Cut()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c] = struct{}{}
		p.conns[up] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(up, c)
			p.forget(c, up)
		}()
		go func() {
			defer p.wg.Done()
			p.downstream(c, up)
			p.forget(c, up)
		}()
	}
}

func (p *Proxy) forget(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
		delete(p.conns, c)
	}
}

// downstream copies broker-to-client frame by frame, applying the armed
// drops and the delay.
func (p *Proxy) downstream(client, broker net.Conn) {
	var buf []byte
	chunk := make([]byte, 64<<10)
	for {
		n, err := broker.Read(chunk)
		if n > 0 {
			buf = append(buf, chunk[:n]...)
			var out []byte
			for len(buf) > 0 {
				size := len(buf)
				if p.split != nil {
					size = p.split(buf)
					if size == 0 {
						break
					}
				}
				frame := buf[:size]
				if !p.dropped(frame) {
					out = append(out, frame...)
				}
				buf = buf[size:]
			}
			buf = append([]byte(nil), buf...)
			if len(out) > 0 {
				p.mu.Lock()
				d := p.delay
				p.mu.Unlock()
				if d > 0 {
					time.Sleep(d)
				}
				if _, werr := client.Write(out); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) dropped(frame []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, d := range p.drops {
		if d.match(frame) {
			p.drops = append(p.drops[:i], p.drops[i+1:]...)
			d.done <- append([]byte(nil), frame...)
			return true
		}
	}
	return false
}

// NATS splits the server-to-client side of the NATS protocol: MSG and HMSG
// carry a payload whose length ends the control line; every other server
// operation (INFO, PING, PONG, +OK, -ERR) is one line.
func NATS(buf []byte) int {
	i := bytes.Index(buf, []byte("\r\n"))
	if i < 0 {
		return 0
	}
	line := buf[:i]
	if !bytes.HasPrefix(line, []byte("MSG ")) && !bytes.HasPrefix(line, []byte("HMSG ")) {
		return i + 2
	}
	fields := bytes.Fields(line)
	size, err := strconv.Atoi(string(fields[len(fields)-1]))
	if err != nil {
		return i + 2 // not a frame we understand: pass the line on
	}
	total := i + 2 + size + 2
	if len(buf) < total {
		return 0
	}
	return total
}

// NATSPayload returns the payload of a MSG/HMSG frame (headers included for
// HMSG), or nil for any other frame.
func NATSPayload(frame []byte) []byte {
	i := bytes.Index(frame, []byte("\r\n"))
	if i < 0 || !(bytes.HasPrefix(frame, []byte("MSG ")) || bytes.HasPrefix(frame, []byte("HMSG "))) {
		return nil
	}
	return bytes.TrimSuffix(frame[i+2:], []byte("\r\n"))
}
