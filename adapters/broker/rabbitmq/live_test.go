package rabbitmq

import (
	"sync"
	"testing"
)

// live lets the package's tests that start a rabbitmq-server of their own
// run in parallel (each mostly waits on its server: its boot, its
// restarts, the suite's timers) while the external tests' noLeftovers
// still looks at the whole process: a test holds the read lock while a
// server of its own may run (ServerRunning), and noLeftovers holds the
// write lock (Quiet), so it looks only when no other test's server runs,
// and none starts until it is done.
var live sync.RWMutex

// ServerRunning marks that t may run a server of its own until the
// returned function (also called at t's end) is called.
func ServerRunning(t *testing.T) (stopped func()) {
	live.RLock()
	stopped = sync.OnceFunc(live.RUnlock)
	t.Cleanup(stopped)
	return stopped
}

// Quiet waits until no test's server runs and holds off new ones until
// the returned function is called.
func Quiet() (done func()) {
	live.Lock()
	return live.Unlock
}
