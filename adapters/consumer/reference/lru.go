package reference

import (
	"container/list"
	"sync"
)

// lru is the LRU design's de-dupe store limit: the keys in order of last
// use, the least recently used first out. The store it stands for is
// shared by every instance of the consumer, so it outlives their crashes.
type lru struct {
	mu    sync.Mutex
	cap   int
	order *list.List               // of keys, the most recently used at the front
	at    map[string]*list.Element // key -> its place in order
}

// use marks key the most recently used and returns the keys evicted to
// keep at most cap. A nil lru (every other design) keeps everything.
func (l *lru) use(key string) (evicted []string) {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.at[key]; ok {
		l.order.MoveToFront(e)
		return nil
	}
	l.at[key] = l.order.PushFront(key)
	for l.order.Len() > l.cap {
		k := l.order.Remove(l.order.Back()).(string)
		delete(l.at, k)
		evicted = append(evicted, k)
	}
	return evicted
}

// lruStores are the LRU design's stores, one per rule: each rule gives the
// consumer a store of its own.
type lruStores struct {
	mu  sync.Mutex
	cap int
	by  map[string]*lru
}

// of is rule's store limit, nil when the design has none.
func (s *lruStores) of(rule string) *lru {
	if s.cap <= 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.by[rule]
	if !ok {
		l = &lru{cap: s.cap, order: list.New(), at: map[string]*list.Element{}}
		s.by[rule] = l
	}
	return l
}
