package broker

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

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
func (f *fixture) compareClientSide(in mq.Inspector, s DeclaredStream, got mq.TopicInfo) ([]string, error) {
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
		h.OK(fmt.Sprintf("consumers=%s pending=%s", shown(gc.Settings["consumers"]), gc.Settings["pending"]))
		diffs = append(diffs, f.compareSettings("group "+name+"/"+g+" ", "group "+name+"/"+g, c.Settings, gc.Settings)...)
		if c.Config.AckWait > 0 && noun != "topic" {
			f.ev.Notef("group %s/%s: the claim min-idle time %s is the workers' setting (XAUTOCLAIM), not the server's: not compared; the timed rules ran at it", name, g, c.Config.AckWait)
		}
		if old, first := gc.Settings["oldest-pending-id"], got.Settings["first-entry-id"]; old != "" && first != "" && idLess(old, first) {
			f.ev.Hazard("group %s/%s holds pending entries from %s, older than the stream's first entry %s: a trim already cut entries still pending; they can be neither processed nor claimed (BR-4.3)", name, g, old, first)
		}
	}
	return diffs, nil
}

// idLess compares two stream entry ids ms-seq.
func idLess(a, b string) bool {
	pa, pb := strings.SplitN(a, "-", 2), strings.SplitN(b, "-", 2)
	if len(pa) != 2 || len(pb) != 2 {
		return false
	}
	am, _ := strconv.ParseUint(pa[0], 10, 64)
	bm, _ := strconv.ParseUint(pb[0], 10, 64)
	if am != bm {
		return am < bm
	}
	as, _ := strconv.ParseUint(pa[1], 10, 64)
	bs, _ := strconv.ParseUint(pb[1], 10, 64)
	return as < bs
}

// compareServer compares the declared server-wide settings with the
// server's and names the server's hazards whether declared or not. It
// returns the differences and the declared settings the server would not
// tell (the kit's unknown, never a fail).
func (f *fixture) compareServer(d *Declared, server map[string]string) (diffs, unreadable []string) {
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
				f.ev.Hazard("the declared producer %s may retry %s after its first attempt, but the cluster forgets an idle producer id after %s (producer.id.expiration.ms %d): a retry that late is not de-duplicated (BR-5.1)", p.Name, p.RetryHorizon, exp, ms)
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
