package profile

import (
	"fmt"
	"strings"
)

// AckRow is one line of seed 002's table (§六, §八): what one layer's
// acknowledgement proves, and what it does not.
type AckRow struct {
	Layer        string   `json:"layer"`
	Ack          string   `json:"ack"`
	Proves       string   `json:"proves"`
	DoesNotProve []string `json:"doesNotProve"`
}

// Acks builds the table for the declared pipeline, layer by layer from the
// client to the device: one acknowledgement never makes the next one true.
func Acks(p *Profile) []AckRow {
	var rows []AckRow
	if h := p.HTTP; h != nil {
		id := h.IDField
		if id == "" {
			id = "message id"
		}
		r := AckRow{Layer: "HTTP API"}
		switch h.RepeatedID {
		case RepeatedConflict:
			r.Ack = "409 for a repeated " + id
			r.Proves = "a message with this " + id + " is already stored, and the stored original is unchanged"
			r.DoesNotProve = []string{"that the original holds this request's content",
				"that its event was published or handled",
				"a replay of the first 200: broker de-dupe does not change the HTTP contract"}
		case RepeatedReplay:
			r.Ack = "the first response replayed for a repeated " + id
			r.Proves = "the first request with this " + id + " committed, and this is its answer"
			r.DoesNotProve = []string{"that this request's body equals the first one's",
				"that its event was published or handled"}
		}
		r.DoesNotProve = append(r.DoesNotProve, "anything on a timeout: query the authoritative state by the stable "+id+" before retrying")
		rows = append(rows, r)
	}
	if es := p.EventStore; es != nil {
		rows = append(rows, AckRow{
			Layer:  "event store " + es.Name,
			Ack:    "append returned",
			Proves: fmt.Sprintf("the events are in the authoritative history; requestId uniqueness: %s", es.RequestIDScope),
			DoesNotProve: []string{"that the event was published to a broker",
				"that projections, handlers or sagas ran",
				"the opposite on failure: a failed PROCESSED stage or a timeout does not prove the events were not appended"},
		})
	}
	for i := range p.Producers {
		rows = append(rows, publishRow(p, &p.Producers[i]))
	}
	for i := range p.Consumers {
		rows = append(rows, consumerRows(p, &p.Consumers[i])...)
	}
	rows = append(rows, AckRow{
		Layer:        "device / end user",
		Ack:          "none declared",
		Proves:       "nothing above proves it",
		DoesNotProve: []string{"that the device received, displayed or read the message: a database commit, a publish ack or a consumer ack is not a read receipt; that is its own contract"},
	})
	return rows
}

func publishRow(p *Profile, pr *Producer) AckRow {
	b, s := p.stream(pr.Broker, pr.Stream)
	id := pr.MessageID
	if id == "" {
		id = "message id"
	}
	r := AckRow{Layer: fmt.Sprintf("publish %s -> %s %s/%s", pr.Name, b.Kind, b.Name, s.Name)}
	keep := fmt.Sprintf("storage %s, replicas %d", orDefault(string(s.Storage), "file"), max(s.Replicas, 1))
	switch b.Kind {
	case KindNATS:
		_, wtext := window(b, s)
		r.Ack = fmt.Sprintf("PubAck (Nats-Msg-Id = %s)", id)
		r.Proves = fmt.Sprintf("the stream stored it, or reports a duplicate of an id stored within the last %s (%s)", wtext, keep)
		r.DoesNotProve = []string{"de-dupe by the id beyond that window, or by content"}
	case KindRedis:
		r.Ack = "XADD returned an entry id"
		r.Proves = "the stream key holds the entry"
		r.DoesNotProve = []string{"any de-dupe: a retry appends another entry"}
		if s.Redis != nil && s.Redis.IDMP != nil {
			// Redis 8.6: XADD IDMP answers a known idempotent id with the
			// entry it added first.
			w, n := s.Redis.IDMP.Window()
			r.Ack = fmt.Sprintf("XADD IDMP returned an entry id (idempotent id = %s)", id)
			r.Proves = fmt.Sprintf("the stream key holds the entry, or the one added with that idempotent id within %s (IDMP-DURATION) and %d newer adds of the producer (IDMP-MAXSIZE)", Duration(w), n)
			r.DoesNotProve = []string{"de-dupe by the id beyond that window or past IDMP-MAXSIZE newer adds of the producer"}
		}
	case KindRabbitMQ:
		r.Ack, r.Proves = rabbitPublishAck(pr)
		r.DoesNotProve = []string{"any de-dupe: a re-published message is a new message (a stream de-dupes by producer name and publishing id)"}
	case KindKafka:
		r.Ack = "produce acknowledged"
		r.Proves = "the partition leader (and the replicas its acks setting waits for) holds the record"
		// Idempotence covers the client's own retries of one send only.
		r.DoesNotProve = []string{"de-dupe across producer sessions", "de-dupe of an application re-send: a new record, written again"}
	}
	if s.Storage == StorageMemory {
		r.DoesNotProve = append(r.DoesNotProve, "that it survives a server restart (storage memory)")
	}
	r.DoesNotProve = append(r.DoesNotProve, "anything when the ack is lost: it may be stored or not; retry with the same id")
	if pr.AfterCommit && !pr.Outbox {
		r.DoesNotProve = append(r.DoesNotProve, "that every committed change is published: with no outbox a crash between commit and publish leaves none")
	}
	r.DoesNotProve = append(r.DoesNotProve, "that any consumer received it")
	return r
}

func consumerRows(p *Profile, c *Consumer) []AckRow {
	b, s := p.stream(c.Broker, c.Stream)
	bc := s.consumer(c.BrokerConsumer)
	var scopes []string
	for _, sc := range c.Scopes {
		scopes = append(scopes, sc.Name)
	}
	r := AckRow{Layer: fmt.Sprintf("consumer %s (%s %s/%s, %s)", c.Name, b.Kind, b.Name, s.Name, bc.Name)}
	red := redeliveries(b, s, bc)
	switch b.Kind {
	case KindNATS:
		r.Ack = "Ack"
		if bc.AckPolicy == AckNone {
			r.Ack = "none (ackPolicy none: acked when sent)"
		}
		how := red.How
		// Past maxAge the message is gone: the redeliveries stop there.
		switch ct, ok := cutByAge(b, s, bc); {
		case ok && ct.lost && ct.last == 0:
			how += fmt.Sprintf("; cut by maxAge %s: none comes while the message is kept", s.MaxAge)
		case ok && ct.lost:
			how += fmt.Sprintf("; cut by maxAge %s: the last while the message is kept at %s", s.MaxAge, durText(ct.sc.at(ct.last)))
		}
		r.Proves = "the server stops redelivering this delivery (otherwise: " + how + ")"
	case KindRedis:
		r.Ack = "XACK"
		r.Proves = "the entry's reference is removed from the group's pending entries list (PEL)"
	case KindRabbitMQ:
		r.Ack, r.Proves = "basic.ack", "the queue removes the message (a stream queue keeps it: the consumer's offset moves past it)"
		if bc.RabbitMQ != nil && bc.RabbitMQ.AckMode == AckAuto {
			r.Ack, r.Proves = "none (ackMode auto: acked when sent)", "nothing: the queue removed it when it was sent"
		}
	case KindKafka:
		r.Ack = "offset commit"
		r.Proves = "the group's read position moved past the record"
		if bc.KafkaShare != nil {
			r.Ack, r.Proves = shareAck(b, s, bc) // kafkashare.go
		}
	}
	r.DoesNotProve = []string{"that " + strings.Join(scopes, " and ") + " happened exactly once"}
	switch {
	case b.Kind == KindKafka && bc.KafkaShare != nil:
		r.DoesNotProve = append(r.DoesNotProve, "that the external effect committed with the ACCEPT", "that the record is deleted: it stays in the log for other groups")
	case b.Kind == KindKafka:
		r.DoesNotProve = append(r.DoesNotProve, "that the external effect committed with the offset")
	case b.Kind == KindRabbitMQ && (s.RabbitMQ == nil || s.RabbitMQ.Type != QueueStream):
		r.DoesNotProve = append(r.DoesNotProve, "nothing is left to replay: the queue removed the acked message")
	case s.Retention == RetentionWorkQueue:
		r.DoesNotProve = append(r.DoesNotProve, "nothing is left to replay: under workqueue retention the ack removes the message")
	default:
		keep := "until it is deleted or trimmed"
		if s.MaxAge > 0 {
			keep = "for maxAge " + s.MaxAge.String()
		}
		r.DoesNotProve = append(r.DoesNotProve, "that the message is deleted: it stays in the stream "+keep+" and can be replayed")
	}
	if c.AckOrder == AckThenEffect {
		r.DoesNotProve = append(r.DoesNotProve, "that the effect happened at all (ack-then-effect)")
	}
	rows := []AckRow{r}
	if d := c.Dedupe; d != nil {
		life := "for ever"
		if d.Lifetime > 0 {
			life = "within the last " + d.Lifetime.String()
		}
		dr := AckRow{
			Layer:  fmt.Sprintf("de-dupe record of %s (%s)", c.Name, d.Store),
			Ack:    "record " + keyText(d.Key) + " found",
			Proves: "a delivery with this key was handled " + life,
		}
		if !contains(d.Key, KeyVersion) && !contains(d.Key, KeyEventID) {
			dr.DoesNotProve = append(dr.DoesNotProve, "which version was handled: a v2 finds v1's record")
		}
		if len(scopes) > 1 && !contains(d.Key, KeyScope) {
			dr.DoesNotProve = append(dr.DoesNotProve, "that every scope is done: one record stands for "+strings.Join(scopes, " and "))
		}
		if d.Lifetime > 0 {
			dr.DoesNotProve = append(dr.DoesNotProve, "anything older than "+d.Lifetime.String()+": a record not found is not \"never handled\"")
		}
		if d.Store == StoreMemory {
			dr.DoesNotProve = append(dr.DoesNotProve, "anything before the consumer's last restart (kept in memory)")
		}
		dr.DoesNotProve = append(dr.DoesNotProve, "that the external effect is there: only that the consumer recorded it")
		rows = append(rows, dr)
	}
	return rows
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
