package registry

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/mq"
)

func load(t *testing.T, yaml string) *profile.Profile {
	t.Helper()
	f := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(f, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDeclaredNATS: what a profile leaves out is the NATS default (so it is
// compared too), an ack wait left out beside a back-off list is its first
// step (as JetStream sets it), an unlimited max deliver is 0; a profile
// with no NATS stream or two NATS brokers is refused.
func TestDeclaredNATS(t *testing.T) {
	p := load(t, `schema: onceproof.profile/v1
name: d
brokers:
  - name: main
    kind: nats
    streams:
      - name: S
        consumers:
          - name: c
            backoff: [5s, 1m]
            maxDeliver: -1
`)
	d, err := DeclaredNATS(p, true)
	if err != nil {
		t.Fatal(err)
	}
	s := d.Streams[0]
	want := mq.TopicConfig{DedupeWindow: 2 * time.Minute, Retention: mq.Limits, Storage: mq.FileStorage, Replicas: 1}
	if s.Topic.Name != "S" || s.Topic.Config != want {
		t.Errorf("stream %+v, want %+v", s.Topic, want)
	}
	c := s.Consumers[0]
	if c.Config.Group != "c" || c.AckPolicy != mq.AckExplicit || c.Config.AckWait != 5*time.Second || c.Config.MaxDeliver != 0 || len(c.Config.Backoff) != 2 {
		t.Errorf("consumer %+v", c)
	}
	if !d.OnServer || !strings.Contains(d.Source, "broker main") {
		t.Errorf("declared %+v", d)
	}
	for _, bad := range []string{
		"schema: onceproof.profile/v1\nname: k\nbrokers:\n  - name: k\n    kind: kafka\n    streams:\n      - name: t\n",
		"schema: onceproof.profile/v1\nname: two\nbrokers:\n  - name: a\n    kind: nats\n    streams:\n      - name: S\n  - name: b\n    kind: nats\n    streams:\n      - name: T\n",
	} {
		if _, err := DeclaredNATS(load(t, bad), true); err == nil {
			t.Errorf("accepted:\n%s", bad)
		}
	}
}
