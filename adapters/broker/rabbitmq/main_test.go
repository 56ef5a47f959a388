package rabbitmq

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/leftovers"
)

// shared is the one server of the kit's own (RunLocal, a one-second ack
// wait) that every test of this package needing only a server to talk to
// shares: a node with the management plugin takes several CPU-seconds to
// boot, more on a loaded host. Tests that restart a server take one of
// their own through its Private. TestMain stops it and checks that
// nothing of it is left.
var shared struct {
	once sync.Once
	rt   *Target
	err  error
}

// sharedLocal returns the shared server, starting it on the first call;
// it skips, saying why, when no rabbitmq-server is on PATH, and fails
// instead with TCK_REQUIRE_RABBITMQ=1 (CI).
func sharedLocal(t testing.TB) *Target {
	t.Helper()
	if !HaveServerBinary() {
		if os.Getenv("TCK_REQUIRE_RABBITMQ") == "1" {
			t.Fatalf("TCK_REQUIRE_RABBITMQ=1 but %s (and epmd) is not on PATH (Debian: apt-get install rabbitmq-server)", ServerBinary)
		}
		t.Skipf("%s is not on PATH (Debian: apt-get install rabbitmq-server)", ServerBinary)
	}
	shared.once.Do(func() {
		shared.rt, shared.err = RunLocal(context.Background(), WithAckWait(time.Second))
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.rt
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.rt != nil {
		if err := shared.rt.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the shared RabbitMQ server: %v\n", err)
			code = 1
		}
		// Stop ends every server it started (the shared one and every
		// test's Private ones): nothing of them may remain.
		for _, left := range leftovers.Pending() {
			if strings.Contains(left, "rabbitmq") || strings.Contains(left, "epmd") {
				fmt.Fprintf(os.Stderr, "left behind by the RabbitMQ servers: %s\n", left)
				code = 1
			}
		}
	}
	os.Exit(code)
}
