package broker_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/registry"

	"github.com/moby/moby/client"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/broker"
)

func br17(t *testing.T, tg registry.BrokerBinding) verdict.Result {
	t.Helper()
	res := runner.Run("broker/window", func() { broker.Register(tg.Target, tg.Hooks()) }, runner.Options{Rules: []string{"BR-1.7"}})
	i := slices.IndexFunc(res, func(r verdict.Result) bool { return r.Rule == "BR-1.7" })
	if i < 0 {
		t.Fatalf("no BR-1.7 in %+v", res)
	}
	return res[i]
}

// TestRestartWindow: BR-1.7 chooses its window from a restart it measures
// first (max(declared, RestartFactor x measured)) unless the run sets one,
// and says which in its evidence.
func TestRestartWindow(t *testing.T) {
	tg := embedded(t, nats.Client{})
	r := br17(t, tg)
	if r.Verdict != verdict.Pass {
		t.Fatalf("BR-1.7 is %s: %s", r.Verdict, r.Reason)
	}
	measured, ok1 := figure(r, "measured restart (before the test)")
	chosen, ok2 := figure(r, "chosen window")
	if !ok1 || !ok2 {
		t.Fatalf("figures missing: %+v", r.Evidence.Figures)
	}
	if c, m := chosen.(float64), measured.(float64); c+0.05 < broker.RestartFactor*m || c < nats.DefaultDedupeWindow.Seconds() {
		t.Errorf("chosen window %.2fs, measured restart %.2fs", c, m)
	}
	if !slices.ContainsFunc(r.Evidence.Notes, func(n string) bool { return strings.Contains(n, "x measured restart") }) {
		t.Errorf("no note says how the window was chosen: %v", r.Evidence.Notes)
	}

	tg.Windows.RestartWindow = 7 * time.Second
	r = br17(t, tg)
	if r.Verdict != verdict.Pass {
		t.Fatalf("BR-1.7 with a set window is %s: %s", r.Verdict, r.Reason)
	}
	if c, _ := figure(r, "chosen window"); c != 7.0 {
		t.Errorf("chosen window %v, want the run's 7s", c)
	}
	if _, measured := figure(r, "measured restart (before the test)"); measured {
		t.Errorf("a set window needs no measured restart")
	}
	if !slices.ContainsFunc(r.Evidence.Notes, func(n string) bool { return strings.Contains(n, "set by the run") }) {
		t.Errorf("no note says the window was set by the run: %v", r.Evidence.Notes)
	}
}

// TestRestartWindowContainer: on a container (a restart takes 1.5-2 s,
// near the default 2 s window) BR-1.7 decides, and leaves no container.
func TestRestartWindowContainer(t *testing.T) {
	containers.Need(t, nats.Image())
	tg := embedded(t, nats.Client{})
	tg.Private = func(ctx context.Context) (kithooks.Server, error) {
		s, err := nats.StartContainerServer(ctx, nats.Client{})
		if err != nil {
			return nil, err
		}
		return registry.BrokerServer(s), nil
	}
	r := br17(t, tg)
	m, _ := figure(r, "measured restart (before the test)")
	c, _ := figure(r, "chosen window")
	t.Logf("BR-1.7 %s: measured restart %vs, chosen window %vs; %s", r.Verdict, m, c, r.Reason)
	if r.Verdict != verdict.Pass {
		t.Fatalf("BR-1.7 on a container is %s: %s", r.Verdict, r.Reason)
	}
	ctx := context.Background()
	dc, err := containers.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := client.Filters{}.Add("label", containers.LabelSession+"="+containers.SessionID())
	cs, err := dc.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Items) != 0 {
		t.Errorf("%d containers left", len(cs.Items))
	}
}
