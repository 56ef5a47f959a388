package profile

import (
	"fmt"
	"strings"
)

// SubjectCovers reports whether every subject matching subject also
// matches filter (NATS wildcards: * one token, > the rest): a producer
// publishing to subject is seen by a consumer filtered on filter.
func SubjectCovers(subject, filter string) bool {
	s, f := strings.Split(subject, "."), strings.Split(filter, ".")
	for i, ft := range f {
		if ft == ">" {
			return i < len(s)
		}
		if i >= len(s) {
			return false
		}
		switch st := s[i]; {
		case st == ">":
			return false
		case ft == "*":
		case st == "*" || st != ft:
			return false
		}
	}
	return len(s) == len(f)
}

// Covered reports whether some filter covers subject (no filter: all).
func Covered(subject string, filters []string) bool {
	if len(filters) == 0 {
		return true
	}
	for _, f := range filters {
		if SubjectCovers(subject, f) {
			return true
		}
	}
	return false
}

// Workers is how many deliveries the application consumers of a broker
// consumer process at once (each declared consumer at least 1).
func (p *Profile) Workers(broker, stream, consumer string) int {
	n := 0
	for _, c := range p.Consumers {
		if c.Broker == broker && c.Stream == stream && c.BrokerConsumer == consumer {
			n += max(c.Workers, 1)
		}
	}
	return n
}

func (f *finder) natsKind(i int, b *Broker) {
	for j := range b.Streams {
		s := &b.Streams[j]
		sp := fmt.Sprintf("brokers[%d].streams[%d]", i, j)
		subject := fmt.Sprintf("nats %s/%s", b.Name, s.Name)
		if s.Discard == DiscardNew {
			var limits []string
			field := sp + ".discard"
			for _, l := range []struct {
				name string
				v    int
			}{{"maxMsgs", s.MaxMsgs}, {"maxBytes", s.MaxBytes}, {"maxMsgsPerSubject", s.MaxMsgsPerSubject}} {
				if l.v > 0 {
					limits = append(limits, fmt.Sprintf("%s %d", l.name, l.v))
				}
			}
			if s.MaxAge > 0 {
				limits = append(limits, "maxAge "+s.MaxAge.String())
			}
			arith := []string{"discard new: a stream at a limit answers a publish with an error instead of dropping its oldest message"}
			if len(limits) > 0 {
				arith = append(arith, fmt.Sprintf("limits %s: the publish after the limit is refused (with maxMsgs 5, publishes 6 and on fail until a message ages out or is removed)", strings.Join(limits, ", ")))
			} else {
				arith = append(arith, "no stream limit declared: the account's or server's storage limit is the one reached")
			}
			f.add("nats-discard-new", subject, field,
				"discard new: once the stream is full the server refuses publishes; a producer that does not treat the error as a retry loses the event",
				arith,
				Mark{Label: "t0", Text: "the stream reaches its limit"},
				Mark{Label: "t1", Text: "publish: refused (maximum messages exceeded); the event exists only in the producer"})
		}
		for k := range s.Consumers {
			c := &s.Consumers[k]
			cp := fmt.Sprintf("%s.consumers[%d]", sp, k)
			csub := fmt.Sprintf("%s consumer %s", subject, c.Name)
			if len(c.FilterSubjects) > 0 {
				for _, pr := range f.p.Producers {
					if pr.Broker != b.Name || pr.Stream != s.Name || pr.Subject == "" || Covered(pr.Subject, c.FilterSubjects) {
						continue
					}
					f.add("nats-filter-mismatch", csub, cp+".filterSubjects",
						fmt.Sprintf("consumer %s filters %s, which does not match %s, where producer %s publishes: it never delivers those events", c.Name, strings.Join(c.FilterSubjects, ", "), pr.Subject, pr.Name),
						[]string{fmt.Sprintf("subject %s is matched by none of the filter subjects %s (* one token, > the rest)", pr.Subject, strings.Join(c.FilterSubjects, ", "))},
						Mark{Label: "t0", Text: "producer " + pr.Name + " publishes to " + pr.Subject + ": stored"},
						Mark{Label: "t1", Text: "a fetch on " + c.Name + ": nothing (the event is stored, never delivered)"})
				}
			}
			if d := c.DeliverPolicy; d != "" && d != DeliverAll {
				f.add("nats-deliver-not-all", csub, cp+".deliverPolicy",
					fmt.Sprintf("deliverPolicy %s: the consumer starts past the events stored before it was created; they are never delivered to it", d),
					[]string{fmt.Sprintf("deliver policy %s is read once, when the consumer is created: events stored earlier are skipped (deliver all starts at the first stored message)", d)},
					Mark{Label: "t0", Text: "3 events stored"},
					Mark{Label: "t1", Text: "consumer created (or re-created after a loss) with deliver " + string(d)},
					Mark{Label: "t2", Text: "a fetch: 0 of the 3 stored events"})
			}
			w := f.p.Workers(b.Name, s.Name, c.Name)
			if c.MaxAckPending > 0 && c.MaxAckPending < w {
				f.add("nats-ack-pending-stalls", csub, cp+".maxAckPending",
					fmt.Sprintf("maxAckPending %d < %d workers: at most %d deliveries are out unacked, the other workers wait, and a slow one stalls the pool", c.MaxAckPending, w, c.MaxAckPending),
					[]string{fmt.Sprintf("maxAckPending %d, workers %d (the sum of the declared consumers' workers): %d of %d can hold a delivery; a fetch of %d gets %d", c.MaxAckPending, w, c.MaxAckPending, w, w, c.MaxAckPending)},
					Mark{Label: "t0", Text: fmt.Sprintf("%d deliveries out, none acked", c.MaxAckPending)},
					Mark{Label: "t0+", Text: "the other workers fetch: nothing until one is acked or its ack wait expires"})
			}
		}
	}
}
