package catalog

// Capabilities of the broker a consumer target reads from (tck run
// --broker). A CO rule that provokes a redelivery through one of them is
// not-applicable on a broker without it, with the broker's reason.
const (
	// CapConsumerAckWait: an unacknowledged delivery comes back by itself
	// after an ack wait (NATS AckWait, Redis XAUTOCLAIM min-idle): the kit
	// loses an ack, or lets a second worker take a delivery the first
	// still holds.
	CapConsumerAckWait Capability = "broker-ack-wait"
	// CapConsumerNak: a delivery can be handed back for a later
	// redelivery (nak with a delay): the kit does it after a failed
	// effect, the reference consumer when its claim is held by a crashed
	// instance.
	CapConsumerNak Capability = "broker-nak"
)
