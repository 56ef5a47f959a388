package rabbitmq

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/mq"
)

// A RabbitMQ node in a container of the locally built image (`make
// images`), started through testcontainers-go's RabbitMQ module: exactly
// AMQP and the management API are published, on 127.0.0.1 only; the
// adapter publishes a message and a consumer gets it back; the management
// API answers the node's user; and nothing is left once it stops. Skipped
// without Docker or the image, failed instead with TCK_REQUIRE_DOCKER=1.
func TestContainerPublishConsumeManagement(t *testing.T) {
	t.Parallel() // each on a server of its own or the shared one, under a run of its own
	containers.Need(t, Image())
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := runContainer(ctx, Image(), 0)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = c.Stop()
		}
	}()
	t.Logf("%s from %s ready in %v: %s, management %s", c.Container.Name, Image(), time.Since(start).Round(time.Millisecond),
		strings.Replace(c.URL, c.Pass, "xxxxx", 1), c.MgmtURL)
	for _, u := range []string{c.URL, c.MgmtURL} {
		if !strings.Contains(u, "@127.0.0.1:") && !strings.HasPrefix(u, "http://127.0.0.1:") {
			t.Errorf("not on loopback: %s", strings.Replace(u, c.Pass, "xxxxx", 1))
		}
	}

	// Exactly the two ports are published, each on 127.0.0.1 alone.
	dc, err := containers.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	info, err := dc.ContainerInspect(ctx, c.Container.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bindings := info.Container.HostConfig.PortBindings
	if len(bindings) != 2 {
		t.Errorf("published ports: %v, want exactly %s and %s", bindings, amqpPort, mgmtPort)
	}
	for port, bs := range bindings {
		for _, b := range bs {
			if !b.HostIP.IsLoopback() {
				t.Errorf("%s is published on %v, not loopback", port, b.HostIP)
			}
		}
	}

	// Publish one message through the adapter and consume it.
	b, err := Connect(ctx, c.URL, Options{Run: NewRun()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.CreateTopic(ctx, "container", mq.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	cons, err := b.Consumer(ctx, "container", mq.ConsumerConfig{Group: "g", AckWait: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	sent := mq.Message{ID: "m-1", Payload: []byte("hello from a container"), Headers: map[string]string{"k": "v"}}
	if _, err := b.Publish(ctx, "container", sent); err != nil {
		t.Fatal(err)
	}
	ds, err := cons.Fetch(ctx, 1, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 {
		t.Fatalf("fetched %d deliveries, want 1", len(ds))
	}
	got := ds[0].Message()
	if got.ID != sent.ID || string(got.Payload) != string(sent.Payload) || got.Headers["k"] != "v" {
		t.Errorf("consumed %+v, want %+v", got, sent)
	}
	if err := ds[0].Ack(ctx); err != nil {
		t.Errorf("ack: %v", err)
	}

	// The management API answers the node's user.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.MgmtURL+"/api/overview", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(c.User, c.Pass)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var ov struct {
		RabbitMQVersion   string `json:"rabbitmq_version"`
		ManagementVersion string `json:"management_version"`
		Node              string `json:"node"`
	}
	err = json.NewDecoder(resp.Body).Decode(&ov)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || err != nil || ov.RabbitMQVersion == "" {
		t.Fatalf("GET /api/overview: HTTP %d, %+v, %v", resp.StatusCode, ov, err)
	}
	t.Logf("management API: RabbitMQ %s, management %s, node %s", ov.RabbitMQVersion, ov.ManagementVersion, ov.Node)

	if err := b.DeleteTopic(ctx, "container"); err != nil {
		t.Errorf("delete topic: %v", err)
	}
	stopped = true
	if err := c.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	for _, left := range leftovers.Pending() {
		if strings.Contains(left, "onceproof-rabbitmq") {
			t.Errorf("still tracked after Stop: %s", left)
		}
	}
	containers.AssertSessionEmpty(t)
}
