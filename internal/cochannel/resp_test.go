package cochannel

import (
	"fmt"
	"github.com/onceproof/tck/internal/coservice"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// Client commands are cut whole (arrays and inline lines); a partial one
// waits for the rest.
func TestRESPCommands(t *testing.T) {
	in := "*4\r\n$4\r\nXACK\r\n$1\r\nk\r\n$1\r\ng\r\n$3\r\n1-2\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\nx"
	buf := []byte(in)
	var got [][]string
	for {
		args, n := respCommand(buf)
		if n == 0 {
			break
		}
		got = append(got, args)
		buf = buf[n:]
	}
	want := [][]string{{"XACK", "k", "g", "1-2"}, {"PING"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("commands %v, want %v", got, want)
	}
	if string(buf) != "*2\r\n$3\r\nGET\r\n$1\r\nx" {
		t.Errorf("left %q", buf)
	}
}

// The deliveries of a reply: XREADGROUP in RESP2 and RESP3 (a map), only
// for the rule's key; XAUTOCLAIM's entries (and its JUSTID ids); nothing
// in a nil reply.
func TestRESPDeliveries(t *testing.T) {
	parse := func(s string) respVal {
		v, n := respValue([]byte(s))
		if n != len(s) {
			t.Fatalf("parsed %d of %d bytes of %q", n, len(s), s)
		}
		return v
	}
	read := []string{"XREADGROUP", "GROUP", "g", "W1", "COUNT", "1", "STREAMS", "k", ">"}
	entry := "*2\r\n$3\r\n5-1\r\n*2\r\n$2\r\nid\r\n$1\r\nx\r\n"
	cases := []struct {
		cmd   []string
		reply string
		want  []string
	}{
		{read, "*1\r\n*2\r\n$1\r\nk\r\n*1\r\n" + entry, []string{"5-1"}},
		{read, "%1\r\n$1\r\nk\r\n*1\r\n" + entry, []string{"5-1"}},
		{read, "*-1\r\n", nil},
		{read, "_\r\n", nil},
		{[]string{"XREADGROUP", "GROUP", "g", "W1", "STREAMS", "other", ">"}, "*1\r\n*2\r\n$5\r\nother\r\n*1\r\n" + entry, nil},
		{[]string{"XAUTOCLAIM", "k", "g", "W1", "2000", "0-0", "COUNT", "1"}, "*3\r\n$3\r\n0-0\r\n*1\r\n" + entry + "*0\r\n", []string{"5-1"}},
		{[]string{"XAUTOCLAIM", "k", "g", "W1", "2000", "0-0", "JUSTID"}, "*3\r\n$3\r\n0-0\r\n*1\r\n$3\r\n5-1\r\n*0\r\n", []string{"5-1"}},
		{[]string{"XCLAIM", "k", "g", "W1", "0", "5-1", "JUSTID"}, "*1\r\n$3\r\n5-1\r\n", nil},
	}
	for _, c := range cases {
		if got := deliveredIDs(c.cmd, "k", parse(c.reply)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%v -> %q: %v, want %v", c.cmd, c.reply, got, c.want)
		}
	}
	if _, n := respValue([]byte("*1\r\n*2\r\n$1\r\nk\r\n")); n != 0 {
		t.Error("a partial reply counted as whole")
	}
	if seq, ok := RedisSeq("1764650000123-7"); !ok || seq != 1764650000123*1_000_000+7 {
		t.Errorf("RedisSeq: %d %v", seq, ok)
	}
	if _, ok := RedisSeq("0-1000000"); ok {
		t.Error("RedisSeq took a sequence it cannot number")
	}
}

// An XACK the hook drops never reaches the server and is answered by the
// proxy in its place among pipelined commands: the client reads its
// replies in the order it sent the commands.
func TestRESPDroppedAckAnsweredInOrder(t *testing.T) {
	srv, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	got := make(chan []string, 1)
	go func() { // a server that answers every command with its name
		c, err := srv.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var seen []string
		var buf []byte
		chunk := make([]byte, 4096)
		for len(seen) < 2 {
			n, err := c.Read(chunk)
			if err != nil {
				return
			}
			buf = append(buf, chunk[:n]...)
			for {
				args, size := respCommand(buf)
				if size == 0 {
					break
				}
				buf = buf[size:]
				seen = append(seen, strings.Join(args, " "))
				_, _ = c.Write([]byte("+" + args[0] + "-" + args[1] + "\r\n"))
			}
		}
		got <- seen
	}()
	var mu sync.Mutex
	var events []string
	hook := func(ev coservice.Event, st coservice.Stage) bool {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, fmt.Sprintf("%s %d %d", ev.Kind, ev.Seq, st))
		return ev.Kind != coservice.Ack // every ack is lost
	}
	w, err := startRESP("W1", srv.Addr().String(), "k", nil, func() coservice.Hook { return hook }, func() int { return 1 })
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	c, err := net.Dial("tcp", w.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("ECHO a\r\nXACK k g 5-1\r\nECHO b\r\n")); err != nil {
		t.Fatal(err)
	}
	want := "+ECHO-a\r\n:1\r\n+ECHO-b\r\n"
	var replies []byte
	chunk := make([]byte, 256)
	for len(replies) < len(want) {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := c.Read(chunk)
		if err != nil {
			t.Fatalf("after %q: %v", replies, err)
		}
		replies = append(replies, chunk[:n]...)
	}
	if string(replies) != want {
		t.Errorf("replies %q, want %q", replies, want)
	}
	if seen := <-got; !reflect.DeepEqual(seen, []string{"ECHO a", "ECHO b"}) {
		t.Errorf("the server saw %v, want the two ECHOs only", seen)
	}
	mu.Lock()
	defer mu.Unlock()
	if !reflect.DeepEqual(events, []string{"ack 5000001 0"}) {
		t.Errorf("hook events %v, want the ack before forwarding only", events)
	}
}
