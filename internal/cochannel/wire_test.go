package cochannel

import (
	"github.com/onceproof/tck/internal/coservice"
	"testing"
)

func TestAckSubjects(t *testing.T) {
	cases := map[string]coservice.Event{
		"$JS.ACK.CO_x.onceproof-service.3.17.20.1796113901850447062.0":               {Seq: 17, Delivered: 3},
		"$JS.ACK.hub.ACCHASH.CO_x.onceproof-service.2.5.9.1796113901850447062.4.tok": {Seq: 5, Delivered: 2},
	}
	for s, want := range cases {
		got, ok := parseAckSubject(s)
		if !ok || got != want {
			t.Errorf("parseAckSubject(%q) = %+v, %v; want %+v", s, got, ok, want)
		}
	}
	for _, bad := range []string{"$JS.ACK.a.b", "$JS.ACK.s.c.x.y.z.t.p"} {
		if _, ok := parseAckSubject(bad); ok {
			t.Errorf("parseAckSubject(%q) accepted", bad)
		}
	}
}

// The client side is cut into whole frames, and pulls and acks (of every
// kind, with or without headers) are told apart from other publishes.
func TestClientFrames(t *testing.T) {
	ack := "$JS.ACK.S.d.1.7.7.1.0"
	stream := "CONNECT {}\r\nPING\r\n" +
		"PUB $JS.API.CONSUMER.MSG.NEXT.S.d _INBOX.x.1 11\r\n{\"batch\":1}\r\n" +
		"PUB " + ack + " 4\r\n+ACK\r\n" +
		"PUB " + ack + " 0\r\n\r\n" +
		"PUB " + ack + " _INBOX.y 4\r\n-NAK\r\n" +
		"HPUB " + ack + " 12 17\r\nNATS/1.0\r\n\r\n+TERM\r\n" +
		"PUB orders.new 5\r\nhello\r\n"
	w := &wire{}
	var kinds []string
	buf := []byte(stream)
	for len(buf) > 0 {
		n := clientFrame(buf)
		if n == 0 {
			t.Fatalf("no whole frame in %q", buf)
		}
		if ev, ok := w.clientEvent(buf[:n]); ok {
			if ev.Kind != coservice.Pull && ev.Seq != 7 {
				t.Errorf("%s: seq %d, want 7", ev.Kind, ev.Seq)
			}
			kinds = append(kinds, ev.Kind)
		}
		buf = buf[n:]
	}
	want := []string{coservice.Pull, coservice.Ack, coservice.Ack, coservice.Nak, coservice.Term}
	if len(kinds) != len(want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Errorf("events %v, want %v", kinds, want)
		}
	}
	if clientFrame([]byte("PUB "+ack+" 4\r\n+AC")) != 0 {
		t.Error("a partial PUB counted as a frame")
	}
}

func TestDeliveryFrames(t *testing.T) {
	w := &wire{}
	ev, ok := w.serverEvent([]byte("HMSG orders 1 $JS.ACK.S.d.2.9.9.1.0 28 31\r\nNATS/1.0\r\nNats-Msg-Id: x\r\n\r\n{}\r\n"))
	if !ok || ev.Kind != coservice.Deliver || ev.Seq != 9 || ev.Delivered != 2 {
		t.Errorf("delivery: %+v %v", ev, ok)
	}
	if _, ok := w.serverEvent([]byte("HMSG _INBOX.x.1 1 28 28\r\nNATS/1.0 408 Request Timeout\r\n\r\n\r\n")); ok {
		t.Error("a pull status counted as a delivery")
	}
}
