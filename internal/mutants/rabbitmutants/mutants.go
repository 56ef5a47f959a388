// Package rabbitmutants holds deliberately broken RabbitMQ clients for the
// self-test. Each sits in front of a real rabbitmq-server (the kit's own,
// from PATH, or TCK_RABBITMQ_URL) and puts one defect where RabbitMQ's
// acknowledgement words are easy to get wrong (seed 002, section 六): a
// confirm read as "stored" although a basic.return came before it, a
// basic.nack read as an ack, a dead-letter exchange named on the queue but
// never declared, a settle sent and forgotten, a term that requeues, a nak
// that drops, a stream producer renamed on every restart, a delivery limit
// declared one higher than asked (certification, BR-6.1). Each names the rules it must fail; the package test and `tck
// selftest --suite broker` check that it does.
package rabbitmutants

import (
	"github.com/onceproof/tck/adapters/broker/rabbitmq"
	"github.com/onceproof/tck/internal/mutants"
)

// Mutant is one broken client, in front of a real rabbitmq-server.
type Mutant = mutants.Mutant[rabbitmq.Client]

// All returns every RabbitMQ mutant.
func All() []Mutant {
	return []Mutant{
		{
			Name: "ignore-returns", Defect: "publishes mandatory but reads only the publisher confirm: an unroutable message comes back (basic.return) and is then confirmed, and the client reports it stored",
			MustFail: []string{"BR-7.1"},
			Build:    rabbitmq.Client{Options: rabbitmq.Options{IgnoreReturns: true}},
		},
		{
			Name: "nack-is-ack", Defect: "treats any publisher confirm as success: a basic.nack (the queue refused the message) is reported stored",
			MustFail: []string{"BR-7.2"},
			Build:    rabbitmq.Client{Options: rabbitmq.Options{NackIsAck: true}},
		},
		{
			Name: "dlx-undeclared", Defect: "names x-dead-letter-exchange on the group's queue but never declares that exchange: RabbitMQ drops what reaches the delivery limit, silently",
			MustFail: []string{"BR-7.3", "BR-2.6"},
			Build:    rabbitmq.Client{Options: rabbitmq.Options{NoDeadLetterExchange: true}},
		},
		{
			Name: "fire-and-forget-ack", Defect: "sends basic.ack and reports it done without learning whether the server took it: an ack after consumer_timeout closed the channel is reported confirmed, and the message comes back",
			MustFail: []string{"BR-7.4"},
			Build:    rabbitmq.Client{Options: rabbitmq.Options{FireAndForgetAck: true}},
		},
		{
			Name: "term-requeues", Defect: "terminates with basic.reject requeue=true: the message it meant to retire comes straight back",
			MustFail: []string{"BR-2.5"},
			Build:    rabbitmq.Client{Options: rabbitmq.Options{TermRequeues: true}},
		},
		{
			Name: "fresh-producer-name", Defect: "names its stream producer after the process, so a restarted producer has a new name: the stream's de-dupe by producer name and publishing id no longer applies and the retried publishes are stored twice",
			MustFail: []string{"BR-7.5"},
			Build:    rabbitmq.Client{Options: rabbitmq.Options{FreshProducerName: true}},
		},
		{
			Name: "delivery-limit-off-by-one", Defect: "declares a group's x-delivery-limit as the max-deliver itself, reading the limit as deliveries where RabbitMQ counts returns: the server holds a queue that allows one delivery more than declared, as read back through the management API",
			MustFail: []string{"BR-6.1"},
			Build:    rabbitmq.Client{Options: rabbitmq.Options{DeliveryLimitOffByOne: true}},
		},
		{
			Name: "nak-drops", Defect: "naks with basic.nack requeue=false: the message it asked to see again is dropped after one delivery",
			MustFail: []string{"BR-2.6"},
			Build:    rabbitmq.Client{Options: rabbitmq.Options{NakDrops: true}},
		},
	}
}
