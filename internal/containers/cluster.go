package containers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATSCluster is a JetStream cluster of nats-server containers on a private
// network. The nodes route to each other by their names on that network;
// the kit reaches each on its own loopback port.
type NATSCluster struct {
	Network *Network
	Nodes   []*NATS // Nodes[i] is server "n<i+1>"
	// URL lists every node's client URL, comma-separated, as nats.go takes it.
	URL string
}

// Node returns the node whose server name is name (e.g. a stream leader).
func (c *NATSCluster) Node(name string) *NATS {
	for _, n := range c.Nodes {
		if n.Spec.Name == name {
			return n
		}
	}
	return nil
}

// StartNATSCluster starts size nodes (3 for a stream with three replicas)
// and waits until JetStream has a meta leader, i.e. streams can be created.
func StartNATSCluster(ctx context.Context, size int, o NATSOptions) (*NATSCluster, error) {
	if size < 1 {
		size = 3
	}
	nw, err := NewNetwork(ctx, "nats-cluster")
	if err != nil {
		return nil, err
	}
	c := &NATSCluster{Network: nw}
	var routes, urls []string
	for i := 1; i <= size; i++ {
		routes = append(routes, fmt.Sprintf("nats://n%d:6222", i))
	}
	type started struct {
		n   *NATS
		err error
	}
	// The nodes start together: each waits for its routes anyway.
	ch := make([]chan started, size)
	for i := range size {
		ch[i] = make(chan started, 1)
		go func() {
			oo := o
			oo.Network, oo.Name, oo.Cluster, oo.Routes = nw, fmt.Sprintf("n%d", i+1), "onceproof", routes
			n, err := StartNATS(ctx, oo)
			ch[i] <- started{n, err}
		}()
	}
	var errs []error
	for i := range size {
		s := <-ch[i]
		if s.err != nil {
			errs = append(errs, s.err)
			continue
		}
		c.Nodes = append(c.Nodes, s.n)
		urls = append(urls, s.n.URL)
	}
	if err := errors.Join(errs...); err != nil {
		c.Remove(context.WithoutCancel(ctx))
		return nil, err
	}
	c.URL = strings.Join(urls, ",")
	if err := Retry(ctx, func() error { return metaLeader(ctx, c.URL) }); err != nil {
		c.Remove(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("nats cluster: no JetStream meta leader: %w", err)
	}
	return c, nil
}

// metaLeader succeeds once the cluster answers a JetStream account request,
// which needs an elected meta leader.
func metaLeader(ctx context.Context, url string) error {
	nc, err := natsgo.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	// Without a meta leader the request gets no answer at all: bound each
	// attempt, so Retry tries again.
	actx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = js.AccountInfo(actx)
	return err
}

// Remove removes every node, then the network.
func (c *NATSCluster) Remove(ctx context.Context) error {
	var errs []error
	for _, n := range c.Nodes {
		errs = append(errs, n.Remove(ctx))
	}
	errs = append(errs, c.Network.Remove(ctx))
	return errors.Join(errs...)
}
