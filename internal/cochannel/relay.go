package cochannel

import (
	"errors"
	"github.com/onceproof/tck/internal/coservice"
	"net"
	"sync"
	"time"
)

// relay is what the NATS and the RESP proxy share: a loopback listener
// whose every connection is paired with one to target, each pair served
// by serve's two directions (a goroutine each, both connections closed
// when either ends), and close, which ends them all.
type relay struct {
	ln     net.Listener
	target string
	nextID func() int
	serve  func(id int, client, up net.Conn) (toServer, toClient func())
	// dial opens the connection to target: plain TCP when nil; a TLS
	// broker's proxy speaks TLS upward (tls.go).
	dial func(target string) (net.Conn, error)

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startRelay(target string, nextID func() int, serve func(id int, client, up net.Conn) (toServer, toClient func())) (*relay, error) {
	return startRelayDial(target, nil, nextID, serve)
}

// startRelayDial is startRelay whose connections to target are opened by
// dial (nil: plain TCP).
func startRelayDial(target string, dial func(string) (net.Conn, error), nextID func() int, serve func(id int, client, up net.Conn) (toServer, toClient func())) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	if dial == nil {
		dial = func(target string) (net.Conn, error) { return net.DialTimeout("tcp", target, 5*time.Second) }
	}
	r := &relay{ln: ln, target: target, nextID: nextID, serve: serve, dial: dial, conns: map[net.Conn]struct{}{}}
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

func (r *relay) close() error {
	err := r.ln.Close()
	r.mu.Lock()
	for c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
	return err
}

func (r *relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		up, err := r.dial(r.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		r.mu.Lock()
		r.conns[c], r.conns[up] = struct{}{}, struct{}{}
		r.mu.Unlock()
		toServer, toClient := r.serve(r.nextID(), c, up)
		r.wg.Add(2)
		go func() { defer r.wg.Done(); toServer(); r.forget(c, up) }()
		go func() { defer r.wg.Done(); toClient(); r.forget(c, up) }()
	}
}

func (r *relay) forget(cs ...net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
		delete(r.conns, c)
	}
}

// proxies is what a channel keeps of its replicas' proxies: one per
// worker, the hook they all ask, and the numbering of their connections.
type proxies struct {
	mu     sync.Mutex
	hook   coservice.Hook
	relays map[string]*relay
	conns  int
}

// addr is worker's proxy address, the proxy started by start on first use.
func (p *proxies) addr(worker string, start func(hook func() coservice.Hook, nextID func() int) (*relay, error)) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.relays[worker]
	if !ok {
		var err error
		if r, err = start(p.currentHook, p.nextConn); err != nil {
			return "", err
		}
		if p.relays == nil {
			p.relays = map[string]*relay{}
		}
		p.relays[worker] = r
	}
	return r.ln.Addr().String(), nil
}

func (p *proxies) currentHook() coservice.Hook {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hook
}

func (p *proxies) nextConn() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns++
	return p.conns
}

// Watch installs the hook every proxy of the channel asks.
func (p *proxies) Watch(h coservice.Hook) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hook = h
}

// closeAll stops every proxy.
func (p *proxies) closeAll() error {
	p.mu.Lock()
	relays := p.relays
	p.relays = nil
	p.mu.Unlock()
	var errs []error
	for _, r := range relays {
		errs = append(errs, r.close())
	}
	return errors.Join(errs...)
}
