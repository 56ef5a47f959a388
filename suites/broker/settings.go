package broker

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
)

// modeled are the settings compareStream compares from mq's typed
// configuration: the rest of what the server reports is compared from
// Settings (every field, by the server's own name).
var modeled = map[string]bool{
	// NATS stream
	"name": true, "subjects": true, "duplicate_window": true, "retention": true,
	"max_age": true, "storage": true, "num_replicas": true,
	// NATS consumer
	"durable_name": true, "ack_policy": true, "ack_wait": true, "backoff": true, "max_deliver": true,
}

// compareSettings compares the declared settings (by the server's name)
// with the server's, records a comparison for each, and lists in one note
// what the server has that is not declared. It returns the differences.
func (f *fixture) compareSettings(prefix, what string, declared, server map[string]string) []string {
	var diffs []string
	keys := make([]string, 0, len(declared))
	for k := range declared {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		want := declared[k]
		got, ok := server[k]
		if !ok {
			// An emulator (kfake) serves only some configs: the kit's
			// note, never the target's difference.
			f.ev.Notef("%s%s: declared %s; the server does not report it (an emulator or an older server may not serve it): not compared", prefix, k, shown(want))
			continue
		}
		if strings.HasPrefix(got, "not readable") {
			// RabbitMQ without its management API: named, never passed.
			f.unreadable = append(f.unreadable, fmt.Sprintf("%s%s, declared %s (%s)", prefix, k, shown(want), got))
			continue
		}
		match := got == want
		f.ev.Compare(verdict.Comparison{Setting: prefix + k, Declared: shown(want), Actual: shown(got), Source: "server", Match: match})
		if !match {
			diffs = append(diffs, fmt.Sprintf("%s%s: declared %s, server %s", prefix, k, shown(want), shown(got)))
		}
	}
	var rest []string
	for k, v := range server {
		if _, ok := declared[k]; ok || modeled[k] {
			continue
		}
		rest = append(rest, fmt.Sprintf("%s %s", k, shown(v)))
	}
	if len(rest) > 0 {
		sort.Strings(rest)
		f.ev.Notef("%s: not declared; the server has %s", what, strings.Join(rest, "; "))
	}
	return diffs
}

func shown(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// num reads a setting as a whole number (0 when absent or not a number).
func num(m map[string]string, k string) int64 {
	n, _ := strconv.ParseInt(m[k], 10, 64)
	return n
}

// natsStreamHazards names what the server's stream settings, declared or
// not, do to the contract.
func (f *fixture) natsStreamHazards(name string, s map[string]string) {
	if s["discard"] != "new" {
		return
	}
	var limits []string
	for _, k := range []string{"max_msgs", "max_bytes", "max_msgs_per_subject"} {
		if n := num(s, k); n > 0 {
			limits = append(limits, fmt.Sprintf("%s %d", k, n))
		}
	}
	if a := s["max_age"]; a != "" && a != "0s" {
		limits = append(limits, "max_age "+a)
	}
	lim := "the account's storage limit"
	if len(limits) > 0 {
		lim = strings.Join(limits, ", ")
	}
	f.ev.Hazard("stream %s has discard new with %s: once full the server refuses every publish (with max_msgs N, publish N+1 and on fail) until messages age out or are removed; a producer that drops a refused publish loses the event", name, lim)
}

// natsConsumerHazards names what a consumer's settings on the server,
// declared or not, do to the contract: a filter that misses what a
// declared producer publishes, a start past the stored events, a
// max_ack_pending below the declared workers.
func (f *fixture) natsConsumerHazards(stream, name string, c map[string]string) {
	d := f.t.Declared
	if fs := c["filter_subjects"]; fs != "" && d != nil {
		filters := strings.Split(fs, ", ")
		for _, p := range d.Producers {
			if p.Stream == stream && p.Subject != "" && !profile.Covered(p.Subject, filters) {
				f.ev.Hazard("consumer %s/%s filters %s, which does not match %s, where the declared producer %s publishes: it never delivers those events", stream, name, fs, p.Subject, p.Name)
			}
		}
	}
	if dp := c["deliver_policy"]; dp != "" && dp != "all" {
		f.ev.Hazard("consumer %s/%s has deliver policy %s: the events stored before it was created are never delivered to it (deliver all starts at the first stored message)", stream, name, dp)
	}
	if d != nil {
		if w := d.Workers[stream+"/"+name]; w > 0 {
			if n := num(c, "max_ack_pending"); n > 0 && int(n) < w {
				f.ev.Hazard("consumer %s/%s has max_ack_pending %d < %d declared workers: at most %d deliveries are out unacked, a fetch of %d gets %d and the other workers wait", stream, name, n, w, n, w, n)
			}
		}
	}
}

// compareClientSide compares a stream whose consumer settings are the
// workers' own (a Redis stream key): the key and each declared group as
// the server holds them, by the server's names, and what the group's
// pending list says about a trim.
func (f *fixture) compareClientSide(in mq.Inspector, s kithooks.DeclaredStream, got mq.TopicInfo) ([]string, error) {
	name, noun := s.Topic.Name, s.Noun
	if noun == "" {
		noun = "stream key"
	}
	diffs := append([]string(nil), f.compareSettings(noun+" "+name+" ", noun+" "+name, s.Topic.Settings, got.Settings)...)
	f.kafkaTopicHazards(name, got.Settings)
	for _, c := range s.Consumers {
		g := c.Config.Group
		h := f.rec.Invoke("kit", "group-info", name+"/"+g)
		gc, err := in.Consumer(f.ctx, name, g)
		if errors.Is(err, mq.ErrNotFound) {
			h.OK("not found")
			f.ev.Compare(verdict.Comparison{Setting: "group " + name + "/" + g, Declared: "present", Actual: "not found", Source: "server"})
			diffs = append(diffs, fmt.Sprintf("group %s/%s: declared present, server not found", name, g))
			continue
		}
		if err != nil {
			h.Fail(oneLine(err.Error()))
			return nil, &setupError{step: "group-info " + name + "/" + g, err: err}
		}
		if noun == "topic" {
			h.OK(fmt.Sprintf("state=%s committed=%s", shown(gc.Settings["state"]), shown(gc.Settings["committed"])))
		} else {
			h.OK(fmt.Sprintf("consumers=%s pending=%s", shown(gc.Settings["consumers"]), gc.Settings["pending"]))
		}
		diffs = append(diffs, f.compareSettings("group "+name+"/"+g+" ", "group "+name+"/"+g, c.Settings, gc.Settings)...)
		if noun == "topic" {
			diffs = append(diffs, f.kafkaGroupPosition(name, g, gc.Settings)...)
			continue
		}
		if c.Config.AckWait > 0 {
			f.ev.Notef("group %s/%s: the claim min-idle time %s is the workers' setting (XAUTOCLAIM), not the server's: not compared; the timed rules ran at it", name, g, c.Config.AckWait)
		}
		diffs = append(diffs, f.redisGroupPosition(name, g, got.Settings, gc.Settings)...)
	}
	return diffs, nil
}

// redisGroupPosition compares a Redis group's position with what its
// pipeline implies: every entry up to its last-delivered-id was delivered
// to it, and every entry still pending is in the stream. Positive evidence
// only: a pending entry XRANGE no longer finds (a trim cut it, BR-4.3), and
// a read counter (entries-read) below the entries added up to a position
// at the stream's end (XGROUP SETID moved the group past entries it never
// read). A group that has read and has no read counter was positioned by
// hand since, in a direction the kit cannot tell: unknown, named; one that
// never read was created at its position: a hazard.
func (f *fixture) redisGroupPosition(name, g string, stream, group map[string]string) []string {
	var diffs []string
	if v := group["oldest-pending-in-stream"]; v != "" {
		f.ev.Compare(verdict.Comparison{Setting: "group " + name + "/" + g + " oldest pending entry in the stream", Declared: "true", Actual: v, Source: "server", Match: v == "true"})
	}
	if group["oldest-pending-in-stream"] == "false" {
		diffs = append(diffs, fmt.Sprintf("group %s/%s: pending entry %s is no longer in the stream (its first entry is %s): a trim or a delete cut an entry still pending, which can be neither processed nor claimed (BR-4.3)",
			name, g, group["oldest-pending-id"], shown(stream["first-entry-id"])))
	}
	ld, last := group["last-delivered-id"], stream["last-generated-id"]
	if ld == "" || ld == "0-0" {
		return diffs // nothing delivered yet: nothing can have been passed over
	}
	if group["entries-read"] == "null" && group["consumers"] == "" && group["pending"] == "0" {
		// Never read: created at an id (XGROUP CREATE ... $), which
		// passes over what came before by design, as NATS's deliver
		// policy new does.
		f.ev.Hazard("group %s/%s was created at %s and has read nothing yet: the entries before it are never delivered to it (XGROUP CREATE at 0 starts at the first entry)", name, g, ld)
		return diffs
	}
	if group["entries-read"] == "null" {
		f.undecided = append(f.undecided, fmt.Sprintf("group %s/%s is at last-delivered-id %s, but Redis keeps no read counter for it (entries-read null: XGROUP SETID or CREATE set its position at an id without ENTRIESREAD, and it read nothing since): whether entries up to %s were skipped cannot be told", name, g, ld, ld))
		return diffs
	}
	read, err1 := strconv.ParseInt(group["entries-read"], 10, 64)
	added, err2 := strconv.ParseInt(stream["entries-added"], 10, 64)
	if err1 != nil || err2 != nil {
		return diffs
	}
	if ld != last {
		f.ev.Notef("group %s/%s: last-delivered-id %s is inside the stream (last entry %s), read counter %d: entries after it are still to come; the kit compares the counter with the position only at the stream's end", name, g, ld, last, read)
		return diffs
	}
	f.ev.Compare(verdict.Comparison{Setting: "group " + name + "/" + g + " entries read at the stream's end", Declared: fmt.Sprint(added), Actual: fmt.Sprint(read), Source: "server", Match: added <= read})
	if skipped := added - read; skipped > 0 {
		diffs = append(diffs, fmt.Sprintf("group %s/%s: last-delivered-id %s is the stream's last entry, but the group read %d of the %d entries added: %d entries were passed over without delivery (the group was moved, e.g. XGROUP SETID): they are never delivered to it",
			name, g, ld, read, added, skipped))
	}
	return diffs
}

// kafkaGroupPosition compares a Kafka group's committed offsets with the
// log: an offset below the log start (records deleted unread) or past the
// log end (set by hand beyond any record) is positive evidence; one inside
// the log cannot be told from consumption, and says so. One inside the log
// committed without a leader epoch was not committed by a consumer of the
// record before it (a reset by hand, or a client older than KIP-320): it
// may have moved past records never processed, which no server state can
// show (no fail), so it is unknown, named.
func (f *fixture) kafkaGroupPosition(topic, g string, s map[string]string) []string {
	var diffs []string
	if v := s["committed-before-log-start"]; v != "" {
		diffs = append(diffs, fmt.Sprintf("group %s/%s: %s: the records between were deleted before the group consumed them", topic, g, v))
	}
	if v := s["committed-past-log-end"]; v != "" {
		diffs = append(diffs, fmt.Sprintf("group %s/%s: %s: an offset no consumption of these records can commit (set by hand); records produced up to it are never consumed by the group", topic, g, v))
	}
	if v := s["committed"]; v != "" {
		f.ev.Compare(verdict.Comparison{Setting: "group " + topic + "/" + g + " committed offsets within the log", Declared: "true", Actual: fmt.Sprint(len(diffs) == 0), Source: "server", Match: len(diffs) == 0})
	}
	if v := s["committed-without-epoch"]; v != "" && len(diffs) == 0 {
		f.undecided = append(f.undecided, fmt.Sprintf("group %s/%s: %s was committed without a leader epoch, so not by a consumer of the record before it (a consumer commits that record's epoch, KIP-320): set by hand (kafka-consumer-groups --reset-offsets, an admin client) or by a client older than Kafka 2.1; Kafka keeps no record of what a group read or processed, so whether it moved past records the pipeline never processed cannot be told (compare with the pipeline's own record of what it processed)", topic, g, v))
	}
	if len(diffs) == 0 {
		f.ev.Notef("group %s/%s: committed %s, lag %s: Kafka keeps no record of what a group read, so a commit moved forward inside the log (kafka-consumer-groups --reset-offsets --to-latest) cannot be told from consumption: not compared", topic, g, shown(s["committed"]), shown(s["lag"]))
	}
	return diffs
}

// compareServer compares the declared server-wide settings with the
// server's and names the server's hazards whether declared or not. It
// returns the differences and the declared settings the server would not
// tell (the kit's unknown, never a fail).
func (f *fixture) compareServer(d *kithooks.Declared, server map[string]string) (diffs, unreadable []string) {
	if d != nil && d.Server != nil {
		keys := make([]string, 0, len(d.Server))
		for k := range d.Server {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			want, got := d.Server[k], server[k]
			if strings.HasPrefix(got, "not served") {
				f.ev.Notef("server %s: declared %s; %s (kfake, an emulator, serves only some configs): not compared", k, want, got)
				continue
			}
			if strings.HasPrefix(got, "not readable") || got == "" {
				unreadable = append(unreadable, k+" ("+shown(got)+")")
				continue
			}
			ok := want == got
			f.ev.Compare(verdict.Comparison{Setting: "server " + k, Declared: want, Actual: got, Source: "server", Match: ok})
			if !ok {
				diffs = append(diffs, fmt.Sprintf("server %s: declared %s, server %s", k, want, got))
			}
		}
	}
	if pol := server["maxmemory-policy"]; strings.HasPrefix(pol, "allkeys-") {
		f.ev.Hazard("maxmemory-policy %s: at maxmemory (%s bytes; 0: no limit) Redis may evict a stream key whole, every entry XADD acknowledged and every pending entry with it; noeviction refuses the write instead", pol, shown(server["maxmemory"]))
	}
	switch ao, fs := server["appendonly"], server["appendfsync"]; {
	case ao == "no":
		f.ev.Hazard("appendonly no: an entry XADD acknowledged is on disk only at the next RDB snapshot, if one is configured; a crash loses everything since")
	case ao == "yes" && (fs == "everysec" || fs == "no"):
		f.ev.Hazard("appendfsync %s: XADD answers before the entry is fsynced; a crash loses up to %s of acknowledged entries (always fsyncs first)", fs, map[string]string{"everysec": "1 s (2 s while an fsync is slow)", "no": "what the kernel has not flushed, about 30 s on Linux"}[fs])
	}
	if ms, err := strconv.ParseInt(server["producer.id.expiration.ms"], 10, 64); err == nil && d != nil {
		exp := time.Duration(ms) * time.Millisecond
		for _, p := range d.Producers {
			if p.RetryHorizon > exp {
				f.ev.Hazard("the declared producer %s's client may retry a record %s after its first attempt (delivery.timeout.ms), but the cluster forgets an idle producer id after %s (producer.id.expiration.ms %d): a retry that late is not de-duplicated (BR-5.1); an application re-send is a new record whatever the producer id's state", p.Name, p.RetryHorizon, exp, ms)
			}
		}
	}
	return diffs, unreadable
}

// kafkaTopicHazards names what a topic's configuration on the cluster,
// declared or not, does to an acknowledged record.
func (f *fixture) kafkaTopicHazards(name string, s map[string]string) {
	if rf := num(s, "replication.factor"); s["min.insync.replicas"] == "1" && rf >= 2 {
		f.ev.Hazard("topic %s has min.insync.replicas 1 with replication factor %d: an acks=all produce may be acked by the leader alone and lost when it dies before a follower copies it; min.insync.replicas %d keeps a second copy", name, rf, min(2, rf))
	}
	if s["unclean.leader.election.enable"] == "true" {
		f.ev.Hazard("topic %s has unclean.leader.election.enable true: a replica out of the ISR may become leader and truncate acknowledged records", name)
	}
}
