package sqlstore

import (
	"path/filepath"
	"testing"

	"github.com/onceproof/tck/internal/sinks"
	"github.com/onceproof/tck/internal/sinks/storetest"
)

func TestStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	clock := sinks.NewScaled(60000)
	storetest.Run(t, clock, func() (sinks.Store, error) { return OpenStore(path, clock) })
}
