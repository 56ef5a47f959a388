package rabbitmq

import "github.com/onceproof/tck/internal/mqx"

// The kit's optional broker vocabulary (internal/mqx) this adapter's
// exported methods return, re-exported under the adapter's name: the
// contract an outside broker author implements (mq) does not include it.
type (
	// DeadLetter is a message a group's queue gave up on (Broker.DeadLetters).
	DeadLetter = mqx.DeadLetter
	// SequencedProducer is one named producer de-duped by sequence (Broker.NamedProducer).
	SequencedProducer = mqx.SequencedProducer
)
