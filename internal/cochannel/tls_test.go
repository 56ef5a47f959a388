package cochannel

import (
	"strings"
	"testing"
)

// The service behind the proxy must see an INFO that asks for no TLS (the
// proxy did the TLS); a server that asks for none is told apart.
func TestPlainInfo(t *testing.T) {
	out, req, err := plainInfo([]byte(`INFO {"server_id":"X","tls_required":true,"tls_verify":true,"max_payload":1048576}` + "\r\n"))
	if err != nil || !req {
		t.Fatalf("a TLS server's INFO: required %v, err %v", req, err)
	}
	s := string(out)
	if strings.Contains(s, "tls_") || !strings.Contains(s, `"server_id":"X"`) || !strings.HasPrefix(s, "INFO {") || !strings.HasSuffix(s, "}\r\n") {
		t.Errorf("rewritten INFO %q: want the same fields without tls_*", s)
	}
	if _, req, err := plainInfo([]byte(`INFO {"server_id":"X"}` + "\r\n")); err != nil || req {
		t.Errorf("a plain server's INFO: required %v, err %v", req, err)
	}
	if _, _, err := plainInfo([]byte("+OK\r\n")); err == nil {
		t.Error("a server that does not start with INFO is taken for NATS")
	}
}
