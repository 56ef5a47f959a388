package esdriver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/redact"
)

// Store is one handle the adapter opened; it implements es.EventStore.
// Closed-handle behaviour is the adapter's: the kit sends every call, so a
// handle that answers after close shows (rule ES-1.10).
type Store struct {
	run    *run
	handle string
}

var _ es.EventStore = (*Store)(nil)

// Append implements es.EventStore.
func (s *Store) Append(ctx context.Context, st es.Stream) error {
	rep, err := s.run.call(ctx, request{Op: opAppend, Handle: s.handle, Stream: toWire(st)})
	if err != nil {
		return err
	}
	return rep.err("append", s.run)
}

// Load implements es.EventStore.
func (s *Store) Load(ctx context.Context, agg es.AggregateID, from, to int) ([]es.Stream, error) {
	rep, err := s.run.call(ctx, request{Op: opLoad, Handle: s.handle, Aggregate: &agg, From: &from, To: &to})
	if err != nil {
		return nil, err
	}
	if err := rep.err("load", s.run); err != nil {
		return nil, err
	}
	out := make([]es.Stream, 0, len(rep.Streams))
	for i, w := range rep.Streams {
		if w.Aggregate == nil {
			return nil, s.run.broke(fmt.Sprintf("the reply to load (request %d) holds stream %d without its aggregate", *rep.ID, i+1))
		}
		out = append(out, fromWire(w))
	}
	return out, nil
}

// RequestIDExists implements es.EventStore.
func (s *Store) RequestIDExists(ctx context.Context, agg es.AggregateID, requestID string) (bool, error) {
	rep, err := s.run.call(ctx, request{Op: opExists, Handle: s.handle, Aggregate: &agg, RequestID: &requestID})
	if err != nil {
		return false, err
	}
	if err := rep.err("exists", s.run); err != nil {
		return false, err
	}
	if rep.Exists == nil {
		return false, s.run.broke(fmt.Sprintf("the reply to exists (request %d) has no \"exists\"", *rep.ID))
	}
	return *rep.Exists, nil
}

// Close implements es.EventStore. A process that is already gone has no
// handle to close: that is no error.
func (s *Store) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rep, err := s.run.call(ctx, request{Op: opClose, Handle: s.handle})
	if err != nil {
		var pe *ProtocolError
		if errors.As(err, &pe) && s.run.dead() {
			return nil
		}
		return err
	}
	return rep.err("close", s.run)
}

// String names the handle in reports.
func (s *Store) String() string { return fmt.Sprintf("%s handle %s", s.run.p.name(), s.handle) }

// err maps a reply's status to the es error it stands for (nil for ok). A
// status the protocol does not define breaks the run (r nil: only a
// ProtocolError is returned).
func (rep reply) err(op string, r *run) error {
	msg := rep.Message
	switch rep.Status {
	case StatusOK:
		return nil
	case StatusDuplicateRequestID:
		e := &es.DuplicateRequestIDError{}
		if rep.Aggregate != nil {
			e.Aggregate = *rep.Aggregate
		}
		if rep.Version != nil {
			e.Version = *rep.Version
		}
		if rep.RequestID != nil {
			e.RequestID = *rep.RequestID
		}
		return e
	case StatusVersionConflict:
		e := &es.VersionConflictError{}
		if rep.Aggregate != nil {
			e.Aggregate = *rep.Aggregate
		}
		if rep.Version != nil {
			e.Version = *rep.Version
		}
		if rep.RequestID != nil {
			e.RequestID = *rep.RequestID
		}
		return e
	case StatusDuplicateAggregateID:
		e := &es.DuplicateAggregateIDError{}
		if rep.Aggregate != nil {
			e.Aggregate = *rep.Aggregate
		}
		if rep.RequestID != nil {
			e.RequestID = *rep.RequestID
		}
		return e
	case StatusClosed:
		return fmt.Errorf("%w: the adapter says: %s", es.ErrClosed, msg)
	case StatusInvalidArgument:
		return fmt.Errorf("%w: the adapter says: %s", es.ErrInvalidArgument, msg)
	case StatusError:
		return fmt.Errorf("the adapter's %s failed: %s", op, msg)
	}
	problem := fmt.Sprintf("the reply to %s has status %q, which protocol %d does not define", op, rep.Status, Version)
	if r == nil {
		return &ProtocolError{Problem: problem}
	}
	return r.broke(problem)
}

// ring keeps the last lines an adapter wrote on stderr (and any stdout line
// that was not a reply), across its runs.
type ring struct {
	mu    sync.Mutex
	lines []string
}

const ringLines = 200

func (g *ring) read(rd io.Reader, run int, stream string) {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		g.add(run, stream, sc.Text())
	}
	_, _ = io.Copy(io.Discard, rd)
}

func (g *ring) add(run int, stream, text string) {
	text = redact.Text(text) // an adapter may print its database URL
	if len(text) > 500 {
		text = text[:500] + "…"
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lines = append(g.lines, fmt.Sprintf("%s [run %d %s] %s", time.Now().UTC().Format("15:04:05.000"), run, stream, text))
	if len(g.lines) > ringLines {
		g.lines = g.lines[len(g.lines)-ringLines:]
	}
}

// render is the last lines within max bytes.
func (g *ring) render(max int) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	size := 0
	for i := len(g.lines) - 1; i >= 0; i-- {
		if size+len(g.lines[i])+1 > max && len(out) > 0 {
			break
		}
		out = append(out, g.lines[i])
		size += len(g.lines[i]) + 1
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return strings.Join(out, "\n")
}
