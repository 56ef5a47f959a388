package coservice

import (
	"reflect"
	"testing"
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
