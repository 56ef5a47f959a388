package consumer

import (
	"github.com/onceproof/tck/suites/consumer/embedded"
	"testing"

	tck "github.com/onceproof/tck/suites/consumer"
)

// TestTaskQueue runs every CO rule against the consumer that acks once its
// effects are stored in a durable task queue and does them later: the kit
// waits for effects to settle before it judges them.
func TestTaskQueue(t *testing.T) {
	t.Parallel() // each Check is a world of its own; one report takes them all
	tck.Check(t, tck.Target{
		New:      NewTaskQueue(t.TempDir()),
		Declared: TaskQueueDeclared,
	}, embedded.NATS())
}
