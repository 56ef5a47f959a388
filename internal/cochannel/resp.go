package cochannel

import (
	"bytes"
	"github.com/onceproof/tck/internal/coservice"
	"net"
	"strconv"
	"strings"
	"sync"
)

// respWire is a Redis-aware TCP proxy on loopback for one replica, the
// RESP counterpart of wire: it reads the client's commands (arrays of bulk
// strings, or inline lines) to see its reads of the rule's stream key (its
// pulls) and its XACKs, and the server's replies to see its deliveries
// (the entries of an XREADGROUP, XAUTOCLAIM or XCLAIM reply). Replies come
// in command order, so each connection keeps the queue of commands it
// forwarded; an XACK the hook drops is answered by the proxy (":N", as if
// the server had taken it: a lost ack the service is not told about) in
// its place in that order.
type respWire struct {
	*relay
	worker string
	key    string
	hook   func() coservice.Hook
}

func startRESP(worker, target, key string, dial func(string) (net.Conn, error), hook func() coservice.Hook, nextID func() int) (*respWire, error) {
	w := &respWire{worker: worker, key: key, hook: hook}
	r, err := startRelayDial(target, dial, nextID, func(id int, c, up net.Conn) (func(), func()) {
		rc := &respConn{w: w, id: id, client: c, up: up}
		return rc.commands, rc.replies
	})
	if err != nil {
		return nil, err
	}
	w.relay = r
	return w, nil
}

// respConn is one client connection through the proxy.
type respConn struct {
	w          *respWire
	id         int
	client, up net.Conn

	mu    sync.Mutex // the queue, and every write to the client
	queue []sent
}

// sent is a command in reply order: forwarded (its reply comes from the
// server) or answered by the proxy (reply set).
type sent struct {
	cmd   []string
	reply []byte
}

func (c *respConn) event(kind string, seq uint64) coservice.Event {
	return coservice.Event{Worker: c.w.worker, Conn: c.id, Kind: kind, Seq: seq}
}

// commands reads the client's commands and forwards them, asking the hook
// about reads of the stream (before and after) and acks (before: it may
// drop one).
func (c *respConn) commands() {
	var buf []byte
	chunk := make([]byte, 64<<10)
	for {
		n, err := c.client.Read(chunk)
		if n > 0 {
			buf = append(buf, chunk[:n]...)
			for {
				args, size := respCommand(buf)
				if size == 0 {
					break
				}
				frame := buf[:size]
				buf = buf[size:]
				if !c.command(args, frame) {
					return
				}
			}
			buf = append([]byte(nil), buf...)
		}
		if err != nil {
			return
		}
	}
}

func (c *respConn) command(args []string, frame []byte) bool {
	name := ""
	if len(args) > 0 {
		name = strings.ToUpper(args[0])
	}
	var evs []coservice.Event
	switch {
	case (name == "XREADGROUP" && readsKey(args, c.w.key)) || (name == "XAUTOCLAIM" && len(args) > 1 && args[1] == c.w.key):
		evs = append(evs, c.event(coservice.Pull, 0))
	case name == "XACK" && len(args) > 3 && args[1] == c.w.key:
		for _, id := range args[3:] {
			if seq, ok := RedisSeq(id); ok {
				evs = append(evs, c.event(coservice.Ack, seq))
			}
		}
	}
	h := c.w.hook()
	if h != nil {
		for _, ev := range evs {
			if !h(ev, coservice.BeforeForward) {
				// Dropped: the proxy answers in its place, as the server
				// would have ("so many entries acked").
				c.mu.Lock()
				c.queue = append(c.queue, sent{cmd: args, reply: []byte(":" + strconv.Itoa(len(args)-3) + "\r\n")})
				ok := c.flush()
				c.mu.Unlock()
				return ok
			}
		}
	}
	if len(args) > 0 { // an empty inline line has no reply
		c.mu.Lock()
		c.queue = append(c.queue, sent{cmd: args})
		c.mu.Unlock()
	}
	if _, err := c.up.Write(frame); err != nil {
		return false
	}
	if h != nil {
		for _, ev := range evs {
			h(ev, coservice.AfterForward)
		}
	}
	return true
}

// flush writes the proxy's own answers at the head of the queue (c.mu
// held).
func (c *respConn) flush() bool {
	for len(c.queue) > 0 && c.queue[0].reply != nil {
		if _, err := c.client.Write(c.queue[0].reply); err != nil {
			return false
		}
		c.queue = c.queue[1:]
	}
	return true
}

// replies reads the server's replies, matches each to the command at the
// head of the queue, and asks the hook about the deliveries in it.
func (c *respConn) replies() {
	var buf []byte
	chunk := make([]byte, 64<<10)
	for {
		n, err := c.up.Read(chunk)
		if n > 0 {
			buf = append(buf, chunk[:n]...)
			for {
				v, size := respValue(buf)
				if size == 0 {
					break
				}
				frame := buf[:size]
				buf = buf[size:]
				if !c.reply(v, frame) {
					return
				}
			}
			buf = append([]byte(nil), buf...)
		}
		if err != nil {
			return
		}
	}
}

func (c *respConn) reply(v respVal, frame []byte) bool {
	c.mu.Lock()
	var cmd []string
	if v.kind != '>' && len(c.queue) > 0 { // a push (RESP3) answers no command
		cmd = c.queue[0].cmd
	}
	c.mu.Unlock()
	var evs []coservice.Event
	if v.kind != '-' {
		for _, id := range deliveredIDs(cmd, c.w.key, v) {
			if seq, ok := RedisSeq(id); ok {
				evs = append(evs, c.event(coservice.Deliver, seq))
			}
		}
	}
	h := c.w.hook()
	if h != nil {
		for _, ev := range evs {
			h(ev, coservice.BeforeForward) // may hold the delivery; never drops one
		}
	}
	c.mu.Lock()
	_, err := c.client.Write(frame)
	if err == nil && v.kind != '>' && len(c.queue) > 0 {
		c.queue = c.queue[1:]
		if !c.flush() {
			err = net.ErrClosed
		}
	}
	c.mu.Unlock()
	if err != nil {
		return false
	}
	if h != nil {
		for _, ev := range evs {
			h(ev, coservice.AfterForward)
		}
	}
	return true
}

// readsKey says whether an XREADGROUP names key among its STREAMS.
func readsKey(args []string, key string) bool {
	for i, a := range args {
		if strings.EqualFold(a, "STREAMS") {
			rest := args[i+1:]
			for _, k := range rest[:len(rest)/2] {
				if k == key {
					return true
				}
			}
			return false
		}
	}
	return false
}

// deliveredIDs are the entry ids a reply hands the client: the entries of
// key in an XREADGROUP reply (an array of [key, entries] in RESP2, a map in
// RESP3), of an XAUTOCLAIM reply ([cursor, entries, deleted]), of an
// XCLAIM reply (entries, unless JUSTID, which only resets ownership).
func deliveredIDs(cmd []string, key string, v respVal) []string {
	if len(cmd) == 0 {
		return nil
	}
	switch strings.ToUpper(cmd[0]) {
	case "XREADGROUP":
		if !readsKey(cmd, key) {
			return nil
		}
		var entries []respVal
		switch v.kind {
		case '*':
			for _, s := range v.arr {
				if len(s.arr) == 2 && string(s.str0()) == key {
					entries = s.arr[1].arr
				}
			}
		case '%':
			for i := 0; i+1 < len(v.arr); i += 2 {
				if string(v.arr[i].str) == key {
					entries = v.arr[i+1].arr
				}
			}
		}
		return entryIDs(entries)
	case "XAUTOCLAIM":
		if len(cmd) < 2 || cmd[1] != key || len(v.arr) < 2 {
			return nil
		}
		return entryIDs(v.arr[1].arr)
	case "XCLAIM":
		if len(cmd) < 2 || cmd[1] != key {
			return nil
		}
		for _, a := range cmd {
			if strings.EqualFold(a, "JUSTID") {
				return nil
			}
		}
		return entryIDs(v.arr)
	}
	return nil
}

// entryIDs reads [id, fields] entries (or bare ids, XAUTOCLAIM JUSTID).
func entryIDs(entries []respVal) []string {
	var out []string
	for _, e := range entries {
		switch {
		case e.kind == '*' && len(e.arr) >= 1:
			out = append(out, string(e.arr[0].str))
		case e.kind == '$' || e.kind == '+':
			out = append(out, string(e.str))
		}
	}
	return out
}

// respVal is one RESP2 or RESP3 value: kind is its type byte; str a
// simple, bulk or number's text; arr an aggregate's elements (a map's or
// attribute's keys and values in turn).
type respVal struct {
	kind byte
	str  []byte
	arr  []respVal
	null bool
}

func (v respVal) str0() []byte {
	if len(v.arr) == 0 {
		return nil
	}
	return v.arr[0].str
}

// respValue parses one whole value at the start of buf; size 0 means not
// all of it is there yet. An attribute (|) is read with the value it
// annotates, as one reply.
func respValue(buf []byte) (respVal, int) {
	i := bytes.Index(buf, []byte("\r\n"))
	if i < 1 {
		return respVal{}, 0
	}
	kind, line := buf[0], buf[1:i]
	at := i + 2
	switch kind {
	case '$', '!', '=':
		n, err := strconv.Atoi(string(line))
		if err != nil || n < 0 {
			return respVal{kind: kind, null: true}, at
		}
		if len(buf) < at+n+2 {
			return respVal{}, 0
		}
		return respVal{kind: kind, str: buf[at : at+n]}, at + n + 2
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(string(line))
		if err != nil || n < 0 {
			return respVal{kind: kind, null: true}, at
		}
		if kind == '%' || kind == '|' {
			n *= 2
		}
		v := respVal{kind: kind, arr: make([]respVal, 0, min(n, 1024))}
		for range n {
			e, size := respValue(buf[at:])
			if size == 0 {
				return respVal{}, 0
			}
			v.arr = append(v.arr, e)
			at += size
		}
		if kind == '|' {
			next, size := respValue(buf[at:])
			if size == 0 {
				return respVal{}, 0
			}
			return next, at + size
		}
		return v, at
	}
	// + - : _ # , ( and anything else: one line.
	return respVal{kind: kind, str: line}, at
}

// respCommand parses one client command: an array of bulk strings, or an
// inline command (a line of words); size 0 means not all of it is there.
func respCommand(buf []byte) ([]string, int) {
	if len(buf) == 0 {
		return nil, 0
	}
	if buf[0] != '*' {
		i := bytes.Index(buf, []byte("\n"))
		if i < 0 {
			return nil, 0
		}
		var args []string
		for _, f := range bytes.Fields(buf[:i]) {
			args = append(args, string(f))
		}
		return args, i + 1
	}
	v, size := respValue(buf)
	if size == 0 {
		return nil, 0
	}
	args := make([]string, 0, len(v.arr))
	for _, a := range v.arr {
		args = append(args, string(a.str))
	}
	return args, size
}
