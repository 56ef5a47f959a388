package eskit

import (
	"fmt"

	"github.com/onceproof/tck/es"
)

// MaxVersion is a convenient upper bound for Load.
const MaxVersion = int(^uint32(0) >> 1)

// Validate checks a stream's shape; stores call it before touching storage so
// that a malformed stream is an argument error, never a conflict.
func Validate(s es.Stream) error {
	switch {
	case s.Aggregate.ID == "" || s.Aggregate.Name == "":
		return fmt.Errorf("%w: aggregate name and id are required", es.ErrInvalidArgument)
	case s.Version < es.InitialVersion:
		return fmt.Errorf("%w: version %d is below the initial version %d", es.ErrInvalidArgument, s.Version, es.InitialVersion)
	case s.RequestID == "":
		return fmt.Errorf("%w: request id is required", es.ErrInvalidArgument)
	case len(s.Events) == 0:
		return fmt.Errorf("%w: a stream needs at least one event", es.ErrInvalidArgument)
	}
	return nil
}

// ValidateRange checks Load's inclusive range.
func ValidateRange(from, to int) error {
	if from < es.InitialVersion || to < from {
		return fmt.Errorf("%w: version range [%d, %d]", es.ErrInvalidArgument, from, to)
	}
	return nil
}
