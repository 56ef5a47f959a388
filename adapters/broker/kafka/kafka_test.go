package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/onceproof/tck/adapters/broker/kafka"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/broker"
)

// TestEmbedded runs every BR rule against an embedded kfake cluster: the
// rules Kafka's model has pass, the others are not-applicable with Kafka's
// reason.
func TestEmbedded(t *testing.T) {
	kt, err := kafka.RunEmbedded(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kt.Stop() })
	tg := registry.KafkaBrokerTarget(kt)
	broker.Check(t, tg.Target, tg.Hooks())
}

// start starts broker/kafka at addr as the CLI does.
func start(t *testing.T, addr string) error {
	t.Helper()
	k, ok := registry.Targets().Get("broker/kafka")
	if !ok {
		t.Fatal("no broker/kafka in the registry")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := k.Start(ctx, target.Ref{Suite: "broker", Name: "kafka", Address: addr})
	if err == nil {
		_ = st.Stop()
	}
	return err
}

// TestBootstrapSilent: a bootstrap address where nothing answers is an
// unavailable target (exit 4), named in one line.
func TestBootstrapSilent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	err = start(t, "kafka://"+addr)
	if !errors.Is(err, target.ErrUnavailable) {
		t.Fatalf("want an unavailable target, got %v", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "broker/kafka") || !strings.Contains(msg, addr) || strings.Contains(msg, "\n") {
		t.Errorf("want one line naming the target and the address, got %q", msg)
	}
}

// TestBootstrapHangs: a bootstrap address that accepts connections and
// never answers is an unavailable target too, once the probe's bound passed.
func TestBootstrapHangs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() }) // held open, never answered
		}
	}()
	err = start(t, "kafka://"+ln.Addr().String())
	if !errors.Is(err, target.ErrUnavailable) || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Fatalf("want an unavailable target naming the address, got %v", err)
	}
	t.Log(err)
}

// TestCreateForbidden: a user whose ACLs forbid creating the kit's topic is
// an unavailable target, and its password appears nowhere.
func TestCreateForbidden(t *testing.T) {
	const pass = "s3cret-Pw-42"
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("PLAIN", "admin", "admin-pw"),
		kfake.User("PLAIN", "tck", pass, kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: "*", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationDescribe, Allow: true}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	err = start(t, "kafka://tck:"+pass+"@"+c.ListenAddrs()[0])
	if !errors.Is(err, target.ErrUnavailable) {
		t.Fatalf("want an unavailable target, got %v", err)
	}
	msg := err.Error()
	if strings.Contains(msg, pass) {
		t.Fatalf("the password leaked: %q", msg)
	}
	if !strings.Contains(msg, "may not create") || !strings.Contains(msg, "broker/kafka") {
		t.Errorf("want a line naming the target and the refused creation, got %q", msg)
	}
	t.Log(msg)
}

// TestContainerNeedsImage: =container without TCK_KAFKA_IMAGE says how to
// get one, in one line, without a Docker call.
func TestContainerNeedsImage(t *testing.T) {
	t.Setenv(kafka.ImageEnv, "")
	err := start(t, "container")
	if !errors.Is(err, target.ErrUnavailable) || !strings.Contains(err.Error(), kafka.ImageEnv) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("want an unavailable target naming %s in one line, got %v", kafka.ImageEnv, err)
	}
}

// TestExternal runs the suite against a cluster reached by URL (a kfake
// the test starts): the same rules as embedded, BR-5.1 with the reply
// swallowed in the kit's own client instead of kfake's request controls.
func TestExternal(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	kt, err := kafka.Open(context.Background(), "kafka://"+c.ListenAddrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	// After every rule: the kit left no topic and no group of its own.
	t.Cleanup(func() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)
		ctx := context.Background()
		topics, err := adm.ListTopics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		groups, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if names := append(topics.Names(), groups.Groups()...); len(names) > 0 {
			t.Errorf("left behind on the cluster: %v", names)
		}
	})
	tg := registry.KafkaBrokerTarget(kt)
	broker.Check(t, tg.Target, tg.Hooks())
}

func TestParseURL(t *testing.T) {
	o, err := kafka.ParseURL("kafka://u:p%40ss@h1:9092?bootstrap=h2:9093,h3&mechanism=SCRAM-SHA-512")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.Seeds, " ") != "h1:9092 h2:9093 h3:9092" || o.User != "u" || o.Password != "p@ss" || o.Mechanism != "SCRAM-SHA-512" {
		t.Errorf("parsed %+v", o)
	}
	for _, bad := range []string{"nats://h:1", "kafka://", "kafka:///x"} {
		if _, err := kafka.ParseURL(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestExternalLostReply: on a cluster reached by URL, the reply swallowed
// in the kit's client makes the client retry; an idempotent producer
// leaves one record (BR-5.1 passes), a producer without idempotence two
// (BR-5.1 fails).
func TestExternalLostReply(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	for _, tc := range []struct {
		name   string
		client kafka.Client
		want   verdict.Verdict
	}{
		{"idempotent", kafka.Client{}, verdict.Pass},
		{"not idempotent", kafka.Client{Options: kafka.Options{Defects: kafka.Defects{NoIdempotence: true}}}, verdict.Fail},
	} {
		kt, err := kafka.Open(context.Background(), "kafka://"+c.ListenAddrs()[0], kafka.WithClient(tc.client))
		if err != nil {
			t.Fatal(err)
		}
		tg := registry.KafkaBrokerTarget(kt)
		res := runner.Run("broker/kafka", func() { broker.Register(tg.Target, tg.Hooks()) }, runner.Options{Rules: []string{"BR-5.1"}})
		for _, r := range res {
			if r.Rule != "BR-5.1" {
				continue
			}
			if r.Verdict != tc.want {
				t.Errorf("%s: BR-5.1 is %s, want %s: %s", tc.name, r.Verdict, tc.want, r.Reason)
			}
			fired := false
			for _, f := range r.Evidence.Figures {
				if f.Name == "produce requests seen" {
					fired = fmt.Sprint(f.Value) == "2"
				}
			}
			if !fired {
				t.Errorf("%s: the lost reply did not make the client retry once: %v", tc.name, r.Evidence.Figures)
			}
		}
	}
}
