package mq

// Info is what a broker adapter knows of the server behind a target it
// opened or started: one shape for every adapter's Target (NATS, Redis,
// Kafka, RabbitMQ), so a report, a registry row or an author reads them
// alike.
type Info struct {
	// URL reaches the server (credentials included: redact before showing).
	URL string
	// Address is how a report names the server; "" means URL, redacted.
	Address string
	// Version names the server and the client library, as the adapter
	// learned them.
	Version string
	// Emulator marks a server that emulates the product (kfake for Kafka):
	// reports label it so.
	Emulator bool
	// Caps is what the server declares through the adapter.
	Caps Capabilities
	// Config is what the target declares beyond Caps, for the report
	// (storage, durability, image, replicas, a fault).
	Config map[string]string
	// Server is what the kit read from the server itself (INFO, CONFIG GET,
	// the connection's properties), each value saying how.
	Server map[string]string
	Notes  []string
	// Lacks says, per capability the server does not have, why, in the
	// product's own words; a rule needing it is not-applicable with that
	// reason.
	Lacks map[string]string
}

// Name is how a report names the server: Address, or else URL (still to
// be redacted).
func (i *Info) Name() string {
	if i.Address != "" {
		return i.Address
	}
	return i.URL
}
