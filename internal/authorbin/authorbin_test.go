// Package authorbin_test is an author's test binary: it imports the four
// suites and the adapters an author would reuse, and nothing of the CLI, and
// checks that running rules of every suite leaves the process as it found
// it: no signal handler of the kit's and the same environment.
package authorbin_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/api/reference"
	"github.com/onceproof/tck/adapters/broker/nats"
	consumerref "github.com/onceproof/tck/adapters/consumer/reference"
	"github.com/onceproof/tck/adapters/eventstore/sqlite"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/apidesc"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/api"
	"github.com/onceproof/tck/suites/broker"
	"github.com/onceproof/tck/suites/consumer"
	"github.com/onceproof/tck/suites/eventstore"
)

// rules is one rule of each suite, run by the child.
var rules = []string{"ES-1.1", "BR-1.1", "CO-1.1", "API-1.1"}

// TestNothingProcessWide runs the child below in a process of its own. The
// child runs one rule of each suite, checks its environment is unchanged,
// and then, with the kit's targets still open (things the kit tracks for
// removal exist), sends itself SIGINT. Without a handler installed by the
// kit Go's default applies and the process dies of the signal; a kit
// handler (signal.Notify) would catch it and the child would go on.
func TestNothingProcessWide(t *testing.T) {
	if os.Getenv("AUTHORBIN_CHILD") != "" {
		t.Skip("the child runs TestChild")
	}
	run := "^TestChild$/^(eventstore|broker|consumer|api)$/^(" + strings.Join(rules, "|") + ")$"
	cmd := exec.Command(os.Args[0], "-test.run", run, "-test.v")
	cmd.Env = append(os.Environ(), "AUTHORBIN_CHILD=1")
	out, err := cmd.CombinedOutput()
	text := string(out)
	for _, id := range rules {
		if !strings.Contains(text, "RULE-PASS "+id) {
			t.Errorf("rule %s did not pass in the child", id)
		}
	}
	if !strings.Contains(text, "ENV-UNCHANGED") {
		t.Errorf("the child's environment changed or was not checked")
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("the child was not ended by its SIGINT (%v): a handler caught it", err)
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("child output:\n%s", text)
	}
}

func TestChild(t *testing.T) {
	if os.Getenv("AUTHORBIN_CHILD") == "" {
		t.Skip("run by TestNothingProcessWide")
	}
	before := environ()
	ctx := context.Background()

	db, stopDB, err := sqlite.OpenTemp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stopDB()
	srv, err := nats.StartEmbedded(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	openNATS := func(ctx context.Context) (mq.Broker, error) { return nats.Connect(ctx, srv.URL(), nats.Options{}) }
	b, err := openNATS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	caps := b.Capabilities()
	_ = b.Close()
	svc, err := reference.Start(ctx, apidesc.Reject409)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	ref := consumerref.Reference()

	// Each suite in a subtest of its own, so its parallel rules have ended
	// when t.Run returns.
	passed := map[string]bool{
		"ES-1.1": t.Run("eventstore", func(t *testing.T) {
			eventstore.Check(t, eventstore.Target{Open: func(context.Context) (es.EventStore, error) { return db.Store(), nil }})
		}),
		"BR-1.1": t.Run("broker", func(t *testing.T) { broker.Check(t, broker.Target{Open: openNATS, Caps: caps}) }),
		"CO-1.1": t.Run("consumer", func(t *testing.T) {
			consumer.Check(t, consumer.Target{Broker: openNATS, New: ref.Factory(), Declared: ref.Declared()})
		}),
		"API-1.1": t.Run("api", func(t *testing.T) { api.Check(t, api.Target{URL: svc.URL()}) }),
	}
	for _, id := range rules {
		if passed[id] {
			fmt.Println("RULE-PASS", id)
		}
	}
	if after := environ(); !slices.Equal(before, after) {
		t.Fatalf("the environment changed:\nbefore %q\nafter  %q", before, after)
	}
	fmt.Println("ENV-UNCHANGED")
	// The kit's targets are still open: what it tracks for removal exists.
	_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
	time.Sleep(10 * time.Second)
	t.Error("SIGINT was caught: something installed a handler")
}

func environ() []string {
	e := os.Environ()
	slices.Sort(e)
	return e
}
