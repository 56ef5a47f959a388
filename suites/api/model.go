package api

import (
	"fmt"
	"slices"

	"github.com/onceproof/tck/internal/apidesc"
	"github.com/onceproof/tck/internal/gen"
)

// The sequential model of a described service, per (scope, id): the
// generated rules check every answer they observe against it, with
// porcupine where calls overlapped (internal/gen).

// mIn is one call: a create of payload P (0: the intent's own, k: its k-th
// other payload) or a read, of the slot Key.
type mIn struct {
	Key  string // scope and id: the model's partition
	Read bool
	P    int
	// Overlap: the call was sent together with another create of its key,
	// so "in flight" is a declared answer (replay).
	Overlap bool
	What    string // for the report
}

// mOut is what the service answered.
type mOut struct {
	NoAnswer bool // killed or lost: the effect is open
	Status   int
	Body     string
	Location string
	CType    string
	Shows    int // a read: the payload it shows (-1: none of the slot's)
}

// mState is one key's state.
type mState struct {
	Exists bool
	P      int
	// Known: the creation's response is known (a replay must repeat it).
	Known                 bool
	Status                int
	Body, Location, CType string
}

func outOf(a answer) mOut {
	if a.Err != nil {
		return mOut{NoAnswer: true, Shows: -1}
	}
	return mOut{Status: a.Status, Body: string(a.Body), Location: a.Header.Get("Location"), CType: a.Header.Get("Content-Type"), Shows: -1}
}

// model is the contract of d as a gen.Model.
func model(d *apidesc.Description) gen.Model[mState, mIn, mOut] {
	return gen.Model[mState, mIn, mOut]{
		Init:  func() mState { return mState{} },
		Key:   func(in mIn) string { return in.Key },
		Equal: func(a, b mState) bool { return a == b },
		Step: func(s mState, in mIn, out mOut) []mState {
			if out.NoAnswer {
				if !in.Read && !s.Exists {
					return []mState{s, {Exists: true, P: in.P}}
				}
				return []mState{s}
			}
			if out.Status >= 500 {
				return nil
			}
			if in.Read {
				switch {
				case !s.Exists && slices.Contains(d.Read.Missing, out.Status):
					return []mState{s}
				case s.Exists && slices.Contains(d.Read.Found, out.Status) && out.Shows == s.P:
					return []mState{s}
				}
				return nil
			}
			created := d.IsCreated(out.Status)
			switch {
			case !s.Exists:
				if created {
					return []mState{{Exists: true, P: in.P, Known: true, Status: out.Status, Body: out.Body, Location: out.Location, CType: out.CType}}
				}
				return nil
			case in.P != s.P:
				if slices.Contains(d.Answers.Mismatch, out.Status) {
					return []mState{s}
				}
				return nil
			case d.Contract == apidesc.Reject409:
				if slices.Contains(d.Answers.Repeat, out.Status) {
					return []mState{s}
				}
				return nil
			}
			// Replay of the intent's own payload.
			if in.Overlap && slices.Contains(d.Answers.InFlight, out.Status) {
				return []mState{s}
			}
			if !created {
				return nil
			}
			if !s.Known {
				n := s
				n.Known, n.Status, n.Body, n.Location, n.CType = true, out.Status, out.Body, out.Location, out.CType
				return []mState{n}
			}
			if out.Status == s.Status && out.Body == s.Body && (s.Location == "" || out.Location == s.Location) && (s.CType == "" || out.CType == s.CType) {
				return []mState{s}
			}
			return nil
		},
		// A create with no answer may land after the restart that killed
		// it (a commit finishing on the old process's connection, a
		// hand-off to a queue): the contract bounds where it lands, not
		// when.
		Pending: func(in mIn, out mOut) bool { return out.NoAnswer && !in.Read },
		Describe: func(in mIn, out mOut) string {
			if out.NoAnswer {
				return in.What + " -> no answer"
			}
			loc := ""
			if d.IsCreated(out.Status) {
				loc = " (no Location)"
				if out.Location != "" {
					loc = " (Location " + clip(out.Location, 60) + ")"
				}
			}
			return fmt.Sprintf("%s -> %d%s %s", in.What, out.Status, loc, clip(out.Body, 80))
		},
	}
}
