package registry

import (
	"context"
	"errors"
	"fmt"
	"sync"

	pgstore "github.com/onceproof/tck/adapters/eventstore/postgres"
	"github.com/onceproof/tck/containers"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/nemesis"
	"github.com/onceproof/tck/precheck"
	"github.com/onceproof/tck/suites/broker"
	"github.com/onceproof/tck/target"
)

// The container mode of a kind: start the backend in a labelled container
// (package containers), then hand its URL to the kind's external path, so a
// container target is checked exactly as a server at a URL would be. A kind
// added later (Redis, Kafka) needs a Start* in package containers and a few
// lines here.

// inContainer binds a container's URL through the kind's external path. The
// started target's Stop also removes the container. Any failure to start is
// target.Unavailable (exit 4): no Docker, a missing image, a server that
// never became ready.
func inContainer(ref target.Ref, c *containers.Container, image, url, version string,
	bind func(url string, stop func() error) (*target.Started, error)) (*target.Started, error) {
	remove := func() error { return c.Remove(context.Background()) }
	st, err := bind(url, remove)
	if err != nil {
		_ = remove()
		return nil, err
	}
	st.Info.Mode = target.Container
	st.Info.Address = target.Redact(url)
	if version != "" {
		st.Info.Version = version
	}
	if st.Info.Config == nil {
		st.Info.Config = map[string]string{}
	}
	st.Info.Config["image"] = image
	st.Info.Notes = append(st.Info.Notes, fmt.Sprintf("container %s from image %s, removed when the run ends", c.Name, image))
	return st, nil
}

// natsContainer is broker/nats=container: one nats-server per run, JetStream
// on file storage inside the container, default sync setting (reported).
// Rules that restart a server (BR-1.7, BR-3.1) get a container of their own,
// restarted for real: gracefully (docker stop) or abruptly (SIGKILL).
func natsContainer(ctx context.Context, ref target.Ref, client NATSClient) (*target.Started, error) {
	n, err := containers.StartNATS(ctx, containers.NATSOptions{})
	if err != nil {
		return nil, target.Unavailable(ref, err)
	}
	// The suite stops a rule's private server when the rule's workload
	// ends, which may be after the run returns; the target's Stop removes
	// any still there, so nothing outlives the run.
	var mu sync.Mutex
	var privates []*containers.Container
	private := func(ctx context.Context) (broker.Server, error) {
		pn, err := containers.StartNATS(ctx, containers.NATSOptions{})
		if err != nil {
			return nil, err
		}
		mu.Lock()
		privates = append(privates, pn.Container)
		mu.Unlock()
		return &natsContainerServer{n: pn, client: client}, nil
	}
	st, err := inContainer(ref, n.Container, n.Spec.Image, n.URL, "nats-server "+n.Version+" (container)",
		func(url string, stop func() error) (*target.Started, error) {
			return natsStarted(ctx, ref, url, client, func() error {
				mu.Lock()
				defer mu.Unlock()
				errs := []error{stop()}
				for _, c := range privates {
					errs = append(errs, c.Remove(context.Background()))
				}
				return errors.Join(errs...)
			}, private)
		})
	if err != nil {
		return nil, err
	}
	if always, interval, err := n.Sync(ctx); err == nil {
		st.Info.Config["sync"] = syncString(always, interval)
	}
	return st, nil
}

// natsContainerServer is a rule's own nats-server container (broker.Server).
type natsContainerServer struct {
	n      *containers.NATS
	client NATSClient
}

func (s *natsContainerServer) Open(ctx context.Context) (mq.Broker, error) {
	return s.client.open(ctx, s.n.URL)
}

// Restart stops the container (SIGTERM: nats-server flushes its stores) or
// kills it (SIGKILL: no flush), starts it again on the same file store and
// the same loopback port, and waits until the server answers.
func (s *natsContainerServer) Restart(ctx context.Context, how broker.Restart) error {
	k := nemesis.Restart
	if how == broker.Abrupt {
		k = nemesis.Kill
	}
	nm := nemesis.New(nil)
	return nm.Apply(ctx, k, nemesis.Target{Name: "nats", Container: s.n.Container, Ready: s.n.Ping}, 0)
}

func (s *natsContainerServer) Sync(ctx context.Context) (string, bool, error) {
	always, interval, err := s.n.Sync(ctx)
	if err != nil {
		return "", false, err
	}
	return syncString(always, interval), !always, nil
}

func (s *natsContainerServer) Stop() error { return s.n.Remove(context.Background()) }

// syncString spells JetStream's sync setting as the report shows it.
func syncString(always bool, interval fmt.Stringer) string {
	if always {
		return "always (fsync every write)"
	}
	if s := interval.String(); s != "0s" {
		return "every " + s + " (acked writes since the last sync can be lost on power loss)"
	}
	return "server default, every 2m0s (acked writes since the last sync can be lost on power loss)"
}

// postgresContainer is eventstore/postgres=container: a fresh PostgreSQL per
// run, through the same pgx adapter as a URL.
func postgresContainer(ctx context.Context, ref target.Ref) (*target.Started, error) {
	p, err := containers.StartPostgres(ctx, containers.PostgresOptions{})
	if err != nil {
		return nil, target.Unavailable(ref, err)
	}
	return inContainer(ref, p.Container, p.Spec.Image, p.URL, "",
		func(url string, stop func() error) (*target.Started, error) {
			db, err := pgstore.Open(ctx, url)
			if err != nil {
				return nil, target.Unavailable(ref, target.RedactError(err, target.Password(url)))
			}
			caps := es.Capabilities{PreCheck: precheck.New}
			st := esStarted(ref, "PostgreSQL "+db.Version()+" (container)", caps,
				func(context.Context) (es.EventStore, error) { return db.Store(), nil },
				func() error { return errors.Join(db.Close(), stop()) })
			return st, nil
		})
}
