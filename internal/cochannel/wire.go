package cochannel

import (
	"bytes"
	"github.com/onceproof/tck/internal/coservice"
	"net"
	"strconv"
	"strings"

	"github.com/onceproof/tck/internal/faultproxy"
)

// wire is a NATS-aware TCP proxy on loopback for one replica: it reads the
// client's frames (PUB, HPUB and the one-line operations) to see its pull
// requests and its acknowledgements, and the server's frames (MSG, HMSG) to
// see its deliveries, and asks the hook before and after forwarding each.
// A frame the hook drops is never forwarded: a lost ack, or the ack of a
// process killed before the broker saw it.
type wire struct {
	*relay
	worker string
	hook   func() coservice.Hook
}

func startWire(worker, target string, dial func(string) (net.Conn, error), hook func() coservice.Hook, nextID func() int) (*wire, error) {
	w := &wire{worker: worker, hook: hook}
	r, err := startRelayDial(target, dial, nextID, func(id int, c, up net.Conn) (func(), func()) {
		return func() { w.pipe(id, c, up, clientFrame, w.clientEvent) },
			func() { w.pipe(id, up, c, faultproxy.NATS, w.serverEvent) }
	})
	if err != nil {
		return nil, err
	}
	w.relay = r
	return w, nil
}

// pipe copies src to dst frame by frame, asking the hook about each frame
// that is an event.
func (w *wire) pipe(id int, src, dst net.Conn, split faultproxy.Splitter, event func(frame []byte) (coservice.Event, bool)) {
	var buf []byte
	chunk := make([]byte, 64<<10)
	for {
		n, err := src.Read(chunk)
		if n > 0 {
			buf = append(buf, chunk[:n]...)
			var out []byte
			for len(buf) > 0 {
				size := split(buf)
				if size == 0 {
					break
				}
				frame := buf[:size]
				buf = buf[size:]
				ev, ok := event(frame)
				if !ok {
					out = append(out, frame...)
					continue
				}
				// Flush what came before, so the hook acts on the
				// stream as the other side sees it.
				if len(out) > 0 {
					if _, werr := dst.Write(out); werr != nil {
						return
					}
					out = out[:0]
				}
				ev.Worker, ev.Conn = w.worker, id
				h := w.hook()
				if h != nil && !h(ev, coservice.BeforeForward) {
					continue
				}
				if _, werr := dst.Write(frame); werr != nil {
					return
				}
				if h != nil {
					h(ev, coservice.AfterForward)
				}
			}
			buf = append([]byte(nil), buf...)
			if len(out) > 0 {
				if _, werr := dst.Write(out); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// clientFrame splits the client-to-server side of the NATS protocol: PUB
// and HPUB carry a payload whose size ends the control line; every other
// client operation (CONNECT, SUB, UNSUB, PING, PONG) is one line.
func clientFrame(buf []byte) int {
	i := bytes.Index(buf, []byte("\r\n"))
	if i < 0 {
		return 0
	}
	line := buf[:i]
	if !hasOp(line, "PUB") && !hasOp(line, "HPUB") {
		return i + 2
	}
	f := bytes.Fields(line)
	size, err := strconv.Atoi(string(f[len(f)-1]))
	if err != nil {
		return i + 2
	}
	total := i + 2 + size + 2
	if len(buf) < total {
		return 0
	}
	return total
}

func hasOp(line []byte, op string) bool {
	return len(line) > len(op) && strings.EqualFold(string(line[:len(op)]), op) && (line[len(op)] == ' ' || line[len(op)] == '\t')
}

// clientEvent recognises a pull request and an acknowledgement.
func (w *wire) clientEvent(frame []byte) (coservice.Event, bool) {
	i := bytes.Index(frame, []byte("\r\n"))
	line := frame[:i]
	pub, hpub := hasOp(line, "PUB"), hasOp(line, "HPUB")
	if !pub && !hpub {
		return coservice.Event{}, false
	}
	f := bytes.Fields(line)
	if len(f) < 3 {
		return coservice.Event{}, false
	}
	subject := string(f[1])
	if strings.HasPrefix(subject, "$JS.API.CONSUMER.MSG.NEXT.") {
		return coservice.Event{Kind: coservice.Pull}, true
	}
	if !strings.HasPrefix(subject, "$JS.ACK.") {
		return coservice.Event{}, false
	}
	payload := bytes.TrimSuffix(frame[i+2:], []byte("\r\n"))
	if hpub && len(f) >= 4 {
		if hs, err := strconv.Atoi(string(f[len(f)-2])); err == nil && hs <= len(payload) {
			payload = payload[hs:]
		}
	}
	ev, ok := parseAckSubject(subject)
	if !ok {
		return coservice.Event{}, false
	}
	switch {
	case len(payload) == 0, bytes.HasPrefix(payload, []byte("+ACK")), bytes.HasPrefix(payload, []byte("+NXT")):
		ev.Kind = coservice.Ack
	case bytes.HasPrefix(payload, []byte("-NAK")):
		ev.Kind = coservice.Nak
	case bytes.HasPrefix(payload, []byte("+TERM")):
		ev.Kind = coservice.Term
	case bytes.HasPrefix(payload, []byte("+WPI")):
		ev.Kind = coservice.Progress
	default:
		return coservice.Event{}, false
	}
	return ev, true
}

// serverEvent recognises a delivery: a MSG or HMSG whose reply subject is
// the message's ack subject.
func (w *wire) serverEvent(frame []byte) (coservice.Event, bool) {
	i := bytes.Index(frame, []byte("\r\n"))
	if i < 0 {
		return coservice.Event{}, false
	}
	line := frame[:i]
	if !hasOp(line, "MSG") && !hasOp(line, "HMSG") {
		return coservice.Event{}, false
	}
	for _, f := range bytes.Fields(line) {
		if bytes.HasPrefix(f, []byte("$JS.ACK.")) {
			ev, ok := parseAckSubject(string(f))
			ev.Kind = coservice.Deliver
			return ev, ok
		}
	}
	return coservice.Event{}, false
}

// parseAckSubject reads the delivery count and the stream sequence from a
// JetStream ack subject, in either of its forms:
//
//	$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>
//	$JS.ACK.<domain>.<account hash>.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>[.<token>]
func parseAckSubject(s string) (coservice.Event, bool) {
	t := strings.Split(s, ".")
	var at int
	switch {
	case len(t) == 9:
		at = 4
	case len(t) >= 11:
		at = 6
	default:
		return coservice.Event{}, false
	}
	delivered, err1 := strconv.Atoi(t[at])
	seq, err2 := strconv.ParseUint(t[at+1], 10, 64)
	if err1 != nil || err2 != nil {
		return coservice.Event{}, false
	}
	return coservice.Event{Seq: seq, Delivered: delivered}, true
}
