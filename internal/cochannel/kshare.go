package cochannel

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/onceproof/tck/internal/coservice"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareState is a share-group channel's group and what the proxies saw
// settled: an offset accepted or rejected in a forwarded acknowledgement,
// or released at the delivery limit (archived).
type shareState struct {
	group   string
	limit   int
	settled map[int64]bool  // under kafkaChannel.mu
	counts  map[int64]int16 // the delivery count of each offset's last delivery
}

// OpenKafkaShare is OpenKafka for a consumer service in a share group: the
// rule's topic, a share group of the rule's own set to read from the
// earliest offset (KIP-932's default is latest: the service would miss
// what the kit published before it joined). The lock and the delivery
// limit are the cluster's (the kit's kfake runs with the suite's ack wait
// and max deliver); limit is the delivery limit, for Outstanding. A
// record at offset o is sequence o+1; ACCEPT is Ack, RELEASE Nak, REJECT
// Term, RENEW Progress.
func OpenKafkaShare(ctx context.Context, seeds []string, name string, limit int) (coservice.Channel, error) {
	c, err := openKafka(ctx, seeds, name)
	if err != nil {
		return nil, err
	}
	var nb [4]byte
	_, _ = rand.Read(nb[:])
	c.share = &shareState{group: coservice.DurableName + "-" + hex.EncodeToString(nb[:]), limit: limit,
		settled: map[int64]bool{}, counts: map[int64]int16{}}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	rr.ResourceName = c.share.group
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Op, cfg.Value = "share.auto.offset.reset", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("earliest")
	rr.Configs = append(rr.Configs, cfg)
	req.Resources = append(req.Resources, rr)
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(actx, c.cl)
	if err == nil {
		for _, r := range resp.Resources {
			if e := kerr.ErrorForCode(r.ErrorCode); e != nil {
				err = e
			}
		}
	}
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("setting share.auto.offset.reset=earliest on share group %s: %w", c.share.group, err)
	}
	return c, nil
}

// ackConfirmed says whether a ShareFetch (78) or ShareAcknowledge (79)
// answer confirms the acknowledgements of the rule's partition: no error
// for the request or for the partition's acknowledgements.
func ackConfirmed(resp kmsg.Response, topicID [16]byte) bool {
	switch rr := resp.(type) {
	case *kmsg.ShareFetchResponse:
		if rr.ErrorCode != 0 {
			return false
		}
		for _, t := range rr.Topics {
			if t.TopicID != topicID {
				continue
			}
			for _, pt := range t.Partitions {
				if pt.Partition == 0 {
					return pt.AcknowledgeErrorCode == 0
				}
			}
		}
	case *kmsg.ShareAcknowledgeResponse:
		if rr.ErrorCode != 0 {
			return false
		}
		for _, t := range rr.Topics {
			if t.TopicID != topicID {
				continue
			}
			for _, pt := range t.Partitions {
				if pt.Partition == 0 {
					return pt.ErrorCode == 0
				}
			}
		}
	}
	return false
}

// shareAck is one offset of an acknowledgement batch and its type
// (1 accept, 2 release, 3 reject, 4 renew; 0, a gap, is no event).
type shareAck struct {
	off int64
	typ int8
}

func (a shareAck) kind() string {
	switch a.typ {
	case 1:
		return coservice.Ack
	case 2:
		return coservice.Nak
	case 3:
		return coservice.Term
	case 4:
		return coservice.Progress
	}
	return ""
}

// expandAcks is a batch's offsets, one type each (one type or none: the
// same for the whole range; none is accept, as Kafka reads it).
func expandAcks(first, last int64, types []int8) []shareAck {
	var out []shareAck
	if last < first || last-first > 1<<20 {
		return nil
	}
	for o := first; o <= last; o++ {
		t := int8(1)
		switch {
		case len(types) == 1:
			t = types[0]
		case len(types) > 1 && int(o-first) < len(types):
			t = types[o-first]
		}
		out = append(out, shareAck{off: o, typ: t})
	}
	return out
}

// packAcks is acks (ascending) as batches of consecutive offsets, each
// with one type per offset.
func packAcks(acks []shareAck) (firsts, lasts []int64, types [][]int8) {
	for i, a := range acks {
		if i == 0 || a.off != acks[i-1].off+1 {
			firsts, lasts, types = append(firsts, a.off), append(lasts, a.off), append(types, nil)
		}
		n := len(lasts) - 1
		lasts[n] = a.off
		types[n] = append(types[n], a.typ)
	}
	return firsts, lasts, types
}

// shareRequest reads a ShareFetch (78) or ShareAcknowledge (79) of the
// channel's share group: its acknowledgements of the rule's partition, each
// shown to the hook, those it drops taken out of the frame (a dropped
// accept is one the broker never gets: the record's lock runs out and it
// is delivered again). It returns the frame to forward, the
// acknowledgements forwarded and whether it is a fetch (a Pull).
func (p *kafkaProxy) shareRequest(key, ver int16, frame, body []byte, ev func(string, uint64, coservice.Stage) bool) ([]byte, []shareAck, bool) {
	ss := p.ch.share
	hdr := frame[:len(frame)-len(body)]
	var (
		acks   []shareAck
		set    func([]shareAck)
		encode func() []byte
		pull   bool
	)
	switch key {
	case 78:
		req := kmsg.NewPtrShareFetchRequest()
		req.SetVersion(ver)
		if req.ReadFrom(body) != nil || req.GroupID == nil || *req.GroupID != ss.group {
			return frame, nil, false
		}
		pull = true
		for ti := range req.Topics {
			t := &req.Topics[ti]
			if t.TopicID != p.ch.topicID {
				continue
			}
			for pi := range t.Partitions {
				pt := &t.Partitions[pi]
				if pt.Partition != 0 {
					continue
				}
				for _, b := range pt.AcknowledgementBatches {
					acks = append(acks, expandAcks(b.FirstOffset, b.LastOffset, b.AcknowledgeTypes)...)
				}
				set = func(kept []shareAck) {
					pt.AcknowledgementBatches = nil
					f, l, ty := packAcks(kept)
					for i := range f {
						b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
						b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = f[i], l[i], ty[i]
						pt.AcknowledgementBatches = append(pt.AcknowledgementBatches, b)
					}
				}
			}
		}
		encode = func() []byte { return reencode(hdr, req) }
	case 79:
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.SetVersion(ver)
		if req.ReadFrom(body) != nil || req.GroupID == nil || *req.GroupID != ss.group {
			return frame, nil, false
		}
		for ti := range req.Topics {
			t := &req.Topics[ti]
			if t.TopicID != p.ch.topicID {
				continue
			}
			for pi := range t.Partitions {
				pt := &t.Partitions[pi]
				if pt.Partition != 0 {
					continue
				}
				for _, b := range pt.AcknowledgementBatches {
					acks = append(acks, expandAcks(b.FirstOffset, b.LastOffset, b.AcknowledgeTypes)...)
				}
				set = func(kept []shareAck) {
					pt.AcknowledgementBatches = nil
					f, l, ty := packAcks(kept)
					for i := range f {
						b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
						b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = f[i], l[i], ty[i]
						pt.AcknowledgementBatches = append(pt.AcknowledgementBatches, b)
					}
				}
			}
		}
		encode = func() []byte { return reencode(hdr, req) }
	}
	var kept []shareAck
	for _, a := range acks {
		if a.kind() == "" || ev(a.kind(), uint64(a.off)+1, coservice.BeforeForward) {
			kept = append(kept, a)
		}
	}
	if len(kept) != len(acks) && set != nil {
		set(kept)
		frame = encode()
	}
	return frame, kept, pull
}

// shareOutstanding is what the share group still holds of the topic's
// records below end: those at or past the share-partition start offset
// (SPSO: every record below it is acknowledged or archived) that no
// acknowledgement the broker confirmed settled.
func (c *kafkaChannel) shareOutstanding(ctx context.Context, end int64) (int, error) {
	spso := int64(0)
	resp, err := c.adm.DescribeShareGroupOffsets(ctx, c.share.group)
	if err == nil {
		err = resp.Error()
	}
	switch {
	case errors.Is(err, kerr.GroupIDNotFound):
		// No member joined yet: nothing was acknowledged.
	case err != nil:
		return 0, fmt.Errorf("the share-partition start offset of %s: %w", c.share.group, err)
	default:
		if d, ok := resp[c.share.group]; ok {
			if o, ok := d.Offsets.Lookup(c.topic, 0); ok {
				if o.Err != nil {
					return 0, fmt.Errorf("the share-partition start offset of %s: %w", c.share.group, o.Err)
				}
				spso = max(o.StartOffset, 0)
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for o := spso; o < end; o++ {
		if !c.share.settled[o] {
			n++
		}
	}
	return n, nil
}

// settle notes acknowledgements the broker confirmed: accepted and
// rejected offsets are settled, and so is a release of a delivery at the
// limit (archived).
func (c *kafkaChannel) settle(acks []shareAck) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range acks {
		switch a.typ {
		case 1, 3:
			c.share.settled[a.off] = true
		case 2:
			if c.share.limit > 0 && int(c.share.counts[a.off]) >= c.share.limit {
				c.share.settled[a.off] = true
			}
		}
	}
}

// shareDelivered is a delivered record of a ShareFetch answer.
type shareDelivered struct {
	seq   uint64
	count int16
}

// sharedSeqs are the rule's records a ShareFetch answer hands the
// service: those of its record batches that fall in an acquired range,
// with that range's delivery count.
func sharedSeqs(rr *kmsg.ShareFetchResponse, ch *kafkaChannel) []shareDelivered {
	var out []shareDelivered
	for _, t := range rr.Topics {
		if t.TopicID != ch.topicID {
			continue
		}
		for _, pt := range t.Partitions {
			if pt.Partition != 0 || pt.ErrorCode != 0 {
				continue
			}
			acquired := func(o int64) (int16, bool) {
				for _, a := range pt.AcquiredRecords {
					if o >= a.FirstOffset && o <= a.LastOffset {
						return a.DeliveryCount, true
					}
				}
				return 0, false
			}
			b := pt.Records
			for len(b) >= 12 {
				n := int(binary.BigEndian.Uint32(b[8:12]))
				if 12+n > len(b) {
					break
				}
				var rb kmsg.RecordBatch
				if rb.ReadFrom(b[:12+n]) == nil && rb.Attributes&0x20 == 0 {
					for o := rb.FirstOffset; o <= rb.FirstOffset+int64(rb.LastOffsetDelta); o++ {
						if cnt, ok := acquired(o); ok {
							out = append(out, shareDelivered{seq: uint64(o) + 1, count: cnt})
						}
					}
				}
				b = b[12+n:]
			}
		}
	}
	ch.mu.Lock()
	for _, d := range out {
		ch.share.counts[int64(d.seq-1)] = d.count
	}
	ch.mu.Unlock()
	return out
}
