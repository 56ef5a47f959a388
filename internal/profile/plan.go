package profile

import (
	"fmt"
	"io"
	"strings"

	"github.com/onceproof/tck/internal/safetext"
)

// Plan is the static analysis of one profile: `tck plan --profile`.
type Plan struct {
	Profile  string   `json:"profile"`
	File     string   `json:"file"`
	Pipeline []string `json:"pipeline"`
	Hazards  []Hazard `json:"hazards"`
	Acks     []AckRow `json:"acks"`
}

// Analyze runs the checks and builds the acknowledgement table.
func Analyze(p *Profile) Plan {
	h := Hazards(p)
	if h == nil {
		h = []Hazard{}
	}
	return Plan{Profile: p.Name, File: p.file, Pipeline: pipeline(p), Hazards: h, Acks: Acks(p)}
}

// pipeline restates the declaration in one line per part, so a reader can
// check the kit read what they meant.
func pipeline(p *Profile) []string {
	var out []string
	if es := p.EventStore; es != nil {
		reuse := "a retry after a timeout gets a fresh requestId"
		if es.RetryReusesRequestID {
			reuse = "a retry after a timeout reuses the requestId"
		}
		unique := map[Scope]string{ScopeAggregate: "requestId unique per aggregate", ScopeGlobal: "requestId unique across aggregates", ScopeNone: "requestId not unique"}[es.RequestIDScope]
		out = append(out, fmt.Sprintf("event store %s: %s; %s", es.Name, unique, reuse))
	}
	if h := p.HTTP; h != nil {
		what := "409, the original unchanged"
		if h.RepeatedID == RepeatedReplay {
			what = "the first response replayed"
		}
		out = append(out, fmt.Sprintf("http: a repeated %s -> %s", orDefault(h.IDField, "message id"), what))
	}
	for _, pr := range p.Producers {
		b, s := p.stream(pr.Broker, pr.Stream)
		id := "a fresh id per retry"
		if pr.KeepsMessageID {
			id = "the same " + orDefault(pr.MessageID, "message id") + " on every retry"
		}
		commit := ""
		if pr.AfterCommit {
			commit = "; publishes after a database commit, with an outbox"
			if !pr.Outbox {
				commit = "; publishes after a database commit, no outbox"
			}
		}
		out = append(out, fmt.Sprintf("producer %s -> %s %s/%s: retries at %s, %s%s", pr.Name, b.Kind, b.Name, s.Name, durations(pr.Retries, "none"), id, commit))
	}
	for _, b := range p.Brokers {
		if b.Kind == KindRabbitMQ {
			continue // its queues in its own words (rabbitmq.go)
		}
		for _, s := range b.Streams {
			line := fmt.Sprintf("stream %s %s/%s: retention %s", b.Kind, b.Name, s.Name, orDefault(string(s.Retention), "limits"))
			if b.Kind == KindNATS {
				w, _ := window(&b, &s)
				line += fmt.Sprintf(", duplicates %s (refreshed on a hit: %t)", w, s.DuplicatesRefreshOnHit)
			}
			line += fmt.Sprintf(", maxAge %s, storage %s, replicas %d", orDefault(nonZero(s.MaxAge), "unlimited"), orDefault(string(s.Storage), "file"), max(s.Replicas, 1))
			out = append(out, line)
			for _, c := range s.Consumers {
				if b.Kind == KindKafka && c.KafkaShare != nil {
					out = append(out, shareLine(&b, &s, &c)) // kafkashare.go
					continue
				}
				out = append(out, fmt.Sprintf("  broker consumer %s: ackPolicy %s, ackWait %s, backoff %s, maxDeliver %s",
					c.Name, orDefault(string(c.AckPolicy), "explicit"), ackWait(&b, &c), durations(c.Backoff, "none"), maxDeliver(c.MaxDeliver)))
			}
		}
	}
	out = append(out, kindPipeline(p)...) // redis.go
	for _, c := range p.Consumers {
		var scopes []string
		for _, s := range c.Scopes {
			scopes = append(scopes, fmt.Sprintf("%s (%s)", s.Name, s.Effect))
		}
		dd := "no de-dupe record"
		if d := c.Dedupe; d != nil {
			life := "kept for ever"
			if d.Lifetime > 0 {
				life = "lives " + d.Lifetime.String()
			}
			dd = fmt.Sprintf("de-dupe record %s %s, %s", keyText(d.Key), life, d.Store)
		}
		out = append(out, fmt.Sprintf("consumer %s on %s/%s/%s: scopes %s; %s; %s", c.Name, c.Broker, c.Stream, c.BrokerConsumer, strings.Join(scopes, ", "), dd, c.AckOrder))
	}
	return out
}

func durations(ds []Duration, none string) string {
	if len(ds) == 0 {
		return none
	}
	var s []string
	for _, d := range ds {
		s = append(s, d.String())
	}
	return strings.Join(s, ", ")
}

func nonZero(d Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

func maxDeliver(n int) string {
	if n <= 0 {
		return "unlimited"
	}
	return fmt.Sprint(n)
}

// WriteText prints the plan for a terminal or a design review. Names come
// from the profile: each field stays on its line, no control character raw.
func (pl Plan) WriteText(w io.Writer) {
	t := safetext.Text
	fmt.Fprintf(w, "profile %s (%s): static analysis, nothing was started\n\n", t(pl.Profile), t(pl.File))
	fmt.Fprintln(w, "declared pipeline")
	for _, l := range pl.Pipeline {
		fmt.Fprintf(w, "  %s\n", t(l))
	}
	fmt.Fprintln(w)
	switch len(pl.Hazards) {
	case 0:
		fmt.Fprintln(w, "no hazards found")
	case 1:
		fmt.Fprintln(w, "1 hazard")
	default:
		fmt.Fprintf(w, "%d hazards\n", len(pl.Hazards))
	}
	for i, h := range pl.Hazards {
		fmt.Fprintf(w, "\nH%d  %s  %s: %s\n", i+1, t(h.Rule), t(h.Check), t(h.Subject))
		fmt.Fprintf(w, "    %s:%d %s\n", t(pl.File), h.Line, t(h.Field))
		fmt.Fprintf(w, "    %s\n", t(h.Summary))
		fmt.Fprintln(w, "    arithmetic:")
		for _, a := range h.Arithmetic {
			fmt.Fprintf(w, "      %s\n", t(a))
		}
		if len(h.Timeline) > 0 {
			fmt.Fprintln(w, "    timeline:")
			width := 0
			for _, m := range h.Timeline {
				width = max(width, len(m.when()))
			}
			for _, m := range h.Timeline {
				fmt.Fprintf(w, "      %-*s  %s\n", width, m.when(), t(m.Text))
			}
		}
	}
	fmt.Fprintln(w, "\nwhat each acknowledgement proves, and what it does not (seed 002 §六, §八)")
	for _, r := range pl.Acks {
		fmt.Fprintf(w, "\n  %s: %s\n", t(r.Layer), t(r.Ack))
		fmt.Fprintf(w, "    proves:          %s\n", t(r.Proves))
		for i, n := range r.DoesNotProve {
			label := ""
			if i == 0 {
				label = "does not prove:"
			}
			fmt.Fprintf(w, "    %-16s %s\n", label, t(n))
		}
	}
}
