package kafka

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/mq"
)

// Private is a kfake cluster of a rule's own, persisted to a directory of
// its own (kfake's DataDir), that the rule may restart gracefully on the
// same port: its clients reconnect and find what was stored (BR-3.1). It
// lives in the kit's process, so it cannot be killed without the kit.
type Private struct {
	client  Client
	dir     string
	persist bool
	port    int
	untrack func()

	mu sync.Mutex
	e  *Embedded
}

// StartPrivate starts a rule's own cluster. Without persist (a mutant) it
// keeps nothing across a restart.
func StartPrivate(ctx context.Context, client Client, persist bool) (*Private, error) {
	p := &Private{client: client, persist: persist}
	if err := leftovers.Create(func() error {
		d, err := leftovers.MkdirTemp("onceproof-kfake-")
		if err != nil {
			return err
		}
		p.dir = d
		p.untrack = leftovers.Track("directory "+d, func() error { return os.RemoveAll(d) })
		return nil
	}); err != nil {
		return nil, err
	}
	if err := p.start(ctx); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return p, nil
}

func (p *Private) start(ctx context.Context) error {
	var opts []kfake.Opt
	if p.persist {
		opts = append(opts, kfake.DataDir(p.dir))
	}
	if p.port > 0 {
		opts = append(opts, kfake.Ports(p.port))
	}
	e, err := StartEmbedded(ctx, opts...)
	if err != nil {
		return err
	}
	if p.port == 0 {
		_, ps, _ := net.SplitHostPort(e.Seeds()[0])
		p.port, _ = strconv.Atoi(ps)
	}
	p.mu.Lock()
	p.e = e
	p.mu.Unlock()
	return nil
}

// Open opens a handle on the cluster; it reconnects across a restart.
func (p *Private) Open(ctx context.Context) (mq.Broker, error) {
	c := p.client
	c.Options.Seeds = []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port))}
	return c.Open(ctx)
}

// Restart closes the cluster (kfake writes its state to the directory on
// the way) and starts it again on the same port and directory. An abrupt
// restart is refused: the cluster runs in the kit's own process.
func (p *Private) Restart(ctx context.Context, abrupt bool) error {
	if abrupt {
		return fmt.Errorf("%w: kfake runs inside the kit's own process and cannot be killed without killing the kit", mq.ErrUnsupported)
	}
	p.mu.Lock()
	e := p.e
	p.mu.Unlock()
	_ = e.Stop()
	return p.start(ctx)
}

// Sync names kfake's durability setting.
func (p *Private) Sync(context.Context) (string, bool, error) {
	if !p.persist {
		return "no data directory: kept in memory only", true, nil
	}
	return "kfake DataDir without SyncWrites: fsync on segment roll and shutdown only (as Kafka's default log.flush.interval.messages)", true, nil
}

// Stop closes the cluster and removes its directory.
func (p *Private) Stop() error {
	p.mu.Lock()
	e := p.e
	p.mu.Unlock()
	if e != nil {
		_ = e.Stop()
	}
	if p.untrack != nil {
		err := os.RemoveAll(p.dir)
		p.untrack()
		return err
	}
	return nil
}
