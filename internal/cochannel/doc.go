// Package cochannel is the consumer suite's wire to a consumer service's
// broker: for each rule it creates a NATS stream and durable pull consumer
// with the declared ack wait and max deliver (a Redis stream key and
// consumer group, a Kafka topic and its group's offsets, a Kafka share
// group), publishes the rule's events in the service's envelope, reads the
// consumer back (what is still unacked), and gives each replica a proxy
// address of its own whose hook sees the replica's pulls, deliveries and
// acks. It links the brokers' clients, so the suite gets it only as a hook
// (kithooks.Consumer.Channel): from tck run, or from the option of
// suites/consumer/embedded. The types it speaks in are internal/coservice's.
package cochannel
