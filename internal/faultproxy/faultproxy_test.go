package faultproxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strconv"
	"testing"
	"time"
)

func TestNATSSplit(t *testing.T) {
	in := []byte("PING\r\nMSG a 1 5\r\nhello\r\nHMSG b 2 12 14\r\nNATS/1.0\r\n\r\nhi\r\n+OK\r\nMSG c 3 4\r\nab")
	var frames []string
	for {
		n := NATS(in)
		if n == 0 {
			break
		}
		frames = append(frames, string(in[:n]))
		in = in[n:]
	}
	want := []string{"PING\r\n", "MSG a 1 5\r\nhello\r\n", "HMSG b 2 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", "+OK\r\n"}
	if len(frames) != len(want) {
		t.Fatalf("frames %q", frames)
	}
	for i := range want {
		if frames[i] != want[i] {
			t.Fatalf("frame %d: %q, want %q", i, frames[i], want[i])
		}
	}
	if string(in) != "MSG c 3 4\r\nab" {
		t.Fatalf("an incomplete frame must wait: left %q", in)
	}
	if p := NATSPayload([]byte(want[1])); string(p) != "hello" {
		t.Fatalf("payload %q", p)
	}
}

// TestDropNext: a server that answers each line with a frame; the proxy
// swallows exactly the armed one and passes the rest.
func TestDropNext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, "MSG r 1 "+itoa(len(line)-2)+"\r\n"+line)
		}
	}()
	p, err := Start(ln.Addr().String(), NATS)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	gone := p.DropNext(func(f []byte) bool { return bytes.Contains(NATSPayload(f), []byte("two")) })
	_, _ = io.WriteString(c, "one\r\ntwo\r\nthree\r\n")
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	var got []string
	for len(got) < 4 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, line)
	}
	if got[1] != "one\r\n" || got[3] != "three\r\n" {
		t.Fatalf("got %q", got)
	}
	select {
	case f := <-gone:
		if !bytes.Contains(f, []byte("two")) {
			t.Fatalf("dropped %q", f)
		}
	default:
		t.Fatal("the armed drop did not report")
	}
	p.Cut()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("read after Cut succeeded")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
