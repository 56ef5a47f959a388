package gen

import (
	"context"
	"time"
)

// Plan sizes a schedule.
type Plan struct {
	Steps     int           // operations
	Instances int           // store handles or service replicas the steps spread over
	Horizon   time.Duration // how far in time the delays reach, in total
	Pauses    int           // steps that wait before they run (their waits add up to about Horizon)
}

// Step is one operation of a schedule: it waits Delay, then runs Op on
// instance Instance.
type Step[O any] struct {
	Index    int
	Instance int
	Delay    time.Duration
	Op       O
}

// Schedule is a seeded sequence of operations over instances and time.
type Schedule[O any] struct {
	Seed  int64
	Plan  Plan
	Steps []Step[O]
}

// NewSchedule draws p.Steps operations from seed: next(src, i) is the i-th
// operation (it may draw values from src), the instance is drawn uniformly,
// and p.Pauses steps, spread over the schedule, wait a share of p.Horizon
// before they run. The same seed and next give the same schedule.
func NewSchedule[O any](seed int64, p Plan, next func(src *Source, i int) O) Schedule[O] {
	src := NewSource(seed)
	p.Instances = max(1, p.Instances)
	s := Schedule[O]{Seed: seed, Plan: p, Steps: make([]Step[O], p.Steps)}
	pauses := map[int]bool{}
	if p.Pauses > 0 && p.Horizon > 0 && p.Steps > 1 {
		// One pause in each of Pauses equal slices of the schedule, so
		// that later steps can reach back across each of them.
		slice := max(1, p.Steps/p.Pauses)
		for k := 0; k < p.Pauses; k++ {
			pauses[min(p.Steps-1, k*slice+1+src.Rand().IntN(max(1, slice-1)))] = true
		}
	}
	share := time.Duration(0)
	if len(pauses) > 0 {
		share = p.Horizon / time.Duration(len(pauses))
	}
	for i := range s.Steps {
		st := Step[O]{Index: i, Instance: src.Rand().IntN(p.Instances)}
		if pauses[i] {
			// Between 3/4 and all of its share: delays differ from run
			// to run, the total stays within the horizon.
			st.Delay = share*3/4 + time.Duration(src.Rand().Int64N(int64(share/4)+1))
		}
		st.Op = next(src, i)
		s.Steps[i] = st
	}
	return s
}

// Play runs steps in order, waiting each one's delay first; it stops at the
// first error do returns (with the step's index) or when ctx ends.
func Play[O any](ctx context.Context, steps []Step[O], do func(ctx context.Context, st Step[O]) error) (int, error) {
	for i, st := range steps {
		if st.Delay > 0 {
			t := time.NewTimer(st.Delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return i, ctx.Err()
			case <-t.C:
			}
		}
		if err := do(ctx, st); err != nil {
			return i, err
		}
	}
	return len(steps), ctx.Err()
}

// Waited is the total delay of steps.
func Waited[O any](steps []Step[O]) time.Duration {
	var d time.Duration
	for _, s := range steps {
		d += s.Delay
	}
	return d
}
