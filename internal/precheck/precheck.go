// Package precheck is the kit's reference request-id pre-check chain (seed:
// "快速预检与权威确认"): a Bloom filter as the fast checker, confirmed by the
// store's authoritative query whenever it says "maybe". It is an early
// filter only; Append still has the final word.
package precheck

import (
	"context"
	"hash/fnv"
	"sync"

	"github.com/onceproof/tck/es"
)

// Chain is the reference es.PreChecker.
type Chain struct {
	Fast      es.FastChecker
	Authority es.ExistenceChecker // nil: the store offers no authoritative query
}

// New builds the chain; it has the signature of es.Capabilities.PreCheck.
func New(fast es.FastChecker, authority es.ExistenceChecker) es.PreChecker {
	return &Chain{Fast: fast, Authority: authority}
}

// Admit lets a request through when the fast checker has never seen it; a
// "maybe" is settled by the authority, and without one (or when it fails) the
// request is rejected: fail closed, never admit on a guess.
func (c *Chain) Admit(ctx context.Context, agg es.AggregateID, requestID string) (bool, error) {
	if !c.Fast.MaybeDuplicate(agg, requestID) {
		return true, nil
	}
	if c.Authority == nil {
		return false, nil
	}
	exists, err := c.Authority.RequestIDExists(ctx, agg, requestID)
	if err != nil {
		return false, err
	}
	return !exists, nil
}

// Bloom is a Bloom filter over (aggregate, request id): no false negatives,
// false positives at a rate set by its size.
type Bloom struct {
	mu   sync.Mutex
	bits []uint64
	k    int
}

// NewBloom makes a filter of m bits (rounded up to 64) and k hash functions.
func NewBloom(m, k int) *Bloom {
	if m < 64 {
		m = 64
	}
	if k < 1 {
		k = 1
	}
	return &Bloom{bits: make([]uint64, (m+63)/64), k: k}
}

func (b *Bloom) positions(agg es.AggregateID, requestID string) []uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(agg.String()))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(requestID))
	sum := h.Sum64()
	h1, h2 := sum&0xffffffff, sum>>32|1 // double hashing
	n := uint64(len(b.bits) * 64)
	out := make([]uint64, b.k)
	for i := range out {
		out[i] = (h1 + uint64(i)*h2) % n
	}
	return out
}

// MaybeDuplicate reports whether the pair may have been remembered.
func (b *Bloom) MaybeDuplicate(agg es.AggregateID, requestID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.positions(agg, requestID) {
		if b.bits[p/64]&(1<<(p%64)) == 0 {
			return false
		}
	}
	return true
}

// Remember adds the pair.
func (b *Bloom) Remember(agg es.AggregateID, requestID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.positions(agg, requestID) {
		b.bits[p/64] |= 1 << (p % 64)
	}
}
