package broker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/broker"
)

// TestSetupErrorsAreUnknown forces each kind of failure of the kit's own
// set-up and checks that the rule is unknown (never fail), that its reason
// is one line naming the step and the underlying error's text (no dump of
// an error value), and that the step is failed on the rule's timeline.
func TestSetupErrorsAreUnknown(t *testing.T) {
	ref := embedded(t, nats.Client{})
	neverListens := filepath.Join(t.TempDir(), "nats-server")
	if err := os.WriteFile(neverListens, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		rule   string
		target func() registry.BrokerBinding
		step   string   // the failed step on the timeline (action)
		want   []string // in the reason
	}{
		{
			name: "connection refused", rule: "BR-1.1", step: "open-broker",
			target: func() registry.BrokerBinding {
				tg := ref
				tg.Open = func(ctx context.Context) (mq.Broker, error) {
					return nats.Connect(ctx, "nats://127.0.0.1:1", nats.Options{Timeout: time.Second})
				}
				return tg
			},
			want: []string{"set-up failed", "open-broker", "connecting", "no servers available"},
		},
		{
			name: "topic creation refused", rule: "BR-1.1", step: "create-topic",
			target: func() registry.BrokerBinding {
				tg := ref
				open := ref.Open
				tg.Open = func(ctx context.Context) (mq.Broker, error) {
					b, err := open(ctx)
					return refuseTopics{b}, err
				}
				return tg
			},
			want: []string{"set-up failed", "create-topic", "topic creation refused by policy"},
		},
		{
			name: "server that never listens", rule: "BR-3.1", step: "start-server",
			target: func() registry.BrokerBinding {
				tg := ref
				tg.Private = func(ctx context.Context) (kithooks.Server, error) {
					ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
					defer cancel()
					_, err := nats.StartProcess(ctx, neverListens, nats.Sync{})
					if err == nil {
						return nil, errors.New("a server that never listens was started")
					}
					return nil, err
				}
				return tg
			},
			want: []string{"set-up failed", "start-server", "not ready", "connect"},
		},
		{
			name: "docker unavailable", rule: "BR-1.7", step: "start-server",
			target: func() registry.BrokerBinding {
				t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "dead.sock"))
				tg := ref
				tg.Private = func(ctx context.Context) (kithooks.Server, error) {
					_, err := nats.StartContainerServer(ctx, nats.Client{})
					if err == nil {
						return nil, errors.New("a container started without Docker")
					}
					return nil, err
				}
				return tg
			},
			want: []string{"set-up failed", "start-server", "docker is not available"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := tc.target()
			res := runner.Run("broker/setup", func() { broker.Register(tg.Target, tg.Hooks()) }, runner.Options{Rules: []string{tc.rule}})
			i := slices.IndexFunc(res, func(r verdict.Result) bool { return r.Rule == tc.rule })
			if i < 0 {
				t.Fatalf("no %s in %+v", tc.rule, res)
			}
			r := res[i]
			t.Logf("%s: %s: %s", tc.rule, r.Verdict, r.Reason)
			if r.Verdict != verdict.Unknown {
				t.Fatalf("%s is %s, want unknown: %s", tc.rule, r.Verdict, r.Reason)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Reason, w) {
					t.Errorf("reason %q lacks %q", r.Reason, w)
				}
			}
			if strings.Contains(r.Reason, "\n") || strings.Contains(r.Reason, "0xc") || strings.Contains(r.Reason, "&errors") {
				t.Errorf("reason is not one plain line: %q", r.Reason)
			}
			failed := slices.ContainsFunc(r.Evidence.Timeline, func(op history.Op) bool {
				return op.Actor == "kit" && op.Action == tc.step && op.Outcome == history.Fail
			})
			if !failed {
				t.Errorf("no failed %s step on the timeline:\n%v", tc.step, r.Evidence.Timeline)
			}
		})
	}
}

// refuseTopics is a broker that refuses to create topics.
type refuseTopics struct{ mq.Broker }

func (refuseTopics) CreateTopic(context.Context, string, mq.TopicConfig) error {
	return errors.New("topic creation refused by policy")
}
