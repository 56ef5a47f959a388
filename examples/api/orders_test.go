package api

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"

	tck "github.com/onceproof/tck/suites/api"
)

// server runs Orders on one loopback address and can restart it there on
// the same database file, the way a deploy or a crash would.
type server struct {
	path, addr string
	mu         sync.Mutex
	orders     *Orders
	ln         net.Listener
	http       *http.Server
}

func (s *server) start() error {
	o, err := Open(s.path)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		o.Close()
		return err
	}
	s.addr, s.orders, s.ln, s.http = ln.Addr().String(), o, ln, &http.Server{Handler: o.Handler()}
	go s.http.Serve(ln)
	return nil
}

// stop closes the listener itself too: a restart that comes before the
// Serve goroutine has run would find the port still taken, since Close
// only closes listeners Serve has begun tracking. Either close may find
// the listener already closed by the other (Serve untracks it only once
// its Accept has returned), which is not an error.
func (s *server) stop() error {
	return errors.Join(ignoreClosed(s.http.Close()), ignoreClosed(s.ln.Close()), s.orders.Close())
}

func ignoreClosed(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Restart is what API-1.5 calls: every connection dropped, a new process
// state, the same database.
func (s *server) Restart(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.stop(); err != nil {
		return err
	}
	return s.start()
}

// TestOrders certifies the service: every API rule is a subtest named by
// its id (`go test -run 'TestOrders/API-2.1' -v` runs one). The service
// follows the kit's default endpoints, so the default description under
// the replay contract describes it; a service of your own is described
// by a file (tck.LoadDescription, docs/api.md).
//
//	TCK_REPORT_DIR=$(mktemp -d) go test ./examples/api
//
// also writes the report bundle `tck run` writes (report.html, results.json,
// junit.xml, ...) into that folder; tck.ReportTo(dir) does it from the code.
func TestOrders(t *testing.T) {
	s := &server{path: filepath.Join(t.TempDir(), "orders.db"), addr: "127.0.0.1:0"}
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.stop() })
	tck.Check(t, tck.Target{URL: "http://" + s.addr, Desc: tck.Default(tck.Replay), Restart: s.Restart})
}
