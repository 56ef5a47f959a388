package cochannel

import (
	"bufio"
	"encoding/binary"
	"errors"
	"github.com/onceproof/tck/internal/coservice"
	"io"
	"net"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaProxy is one worker's Kafka protocol proxy in front of one broker
// node: it sees the service's fetches of the rule's topic (Pull), the
// records they return (Deliver, one per record, seq offset+1) and its
// offset commits for the group (Ack of every sequence a commit newly
// covers: commits are cumulative). Metadata and FindCoordinator answers are
// rewritten so every broker the cluster names is reached through a
// listener of the worker's own. A dropped ack is a commit the proxy
// answers itself (error code 0 per partition) and never forwards. Over a
// share group (kshare.go) it reads ShareFetch and ShareAcknowledge
// instead: acknowledgements per offset, a dropped one taken out of the
// forwarded request.
type kafkaProxy struct {
	ch     *kafkaChannel
	worker string
	hook   func() coservice.Hook
	nextID func() int
}

type kreq struct {
	key, ver int16
	fetchAt  int64      // a Fetch of the rule's partition: its fetch offset (-1 none)
	share    bool       // a ShareFetch of the channel's share group
	acks     []shareAck // the acknowledgements it forwarded (share groups)
}

func (p *kafkaProxy) serve(id int, client, up net.Conn) (func(), func()) {
	var (
		mu      sync.Mutex
		pending = map[int32]kreq{}
		wmu     sync.Mutex // writes to client
	)
	writeClient := func(frame []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		_, err := client.Write(frame)
		return err
	}
	ev := func(kind string, seq uint64, st coservice.Stage) bool {
		h := p.hook()
		if h == nil {
			return true
		}
		return h(coservice.Event{Worker: p.worker, Conn: id, Kind: kind, Seq: seq}, st)
	}
	evd := func(d shareDelivered, st coservice.Stage) {
		if h := p.hook(); h != nil {
			h(coservice.Event{Worker: p.worker, Conn: id, Kind: coservice.Deliver, Seq: d.seq, Delivered: int(d.count)}, st)
		}
	}
	toServer := func() {
		r := bufio.NewReader(client)
		for {
			frame, err := readFrame(r)
			if err != nil {
				return
			}
			key, ver, corr, body, ok := splitRequest(frame)
			if !ok {
				return
			}
			q := kreq{key: key, ver: ver, fetchAt: -1}
			if (key == 78 || key == 79) && p.ch.share != nil {
				// ShareFetch (its piggy-backed acknowledgements) and
				// ShareAcknowledge: acknowledgements per offset.
				out, kept, pull := p.shareRequest(key, ver, frame, body, ev)
				q.share, q.acks = pull, kept
				if pull {
					ev(coservice.Pull, 0, coservice.BeforeForward)
				}
				mu.Lock()
				pending[corr] = q
				mu.Unlock()
				if _, err := up.Write(out); err != nil {
					return
				}
				for _, a := range kept {
					if a.kind() != "" {
						ev(a.kind(), uint64(a.off)+1, coservice.AfterForward)
					}
				}
				if pull {
					ev(coservice.Pull, 0, coservice.AfterForward)
				}
				continue
			}
			var acks []uint64
			var commitAt int64 = -1
			var commitReq *kmsg.OffsetCommitRequest
			switch key {
			case 1: // Fetch
				req := kmsg.NewPtrFetchRequest()
				req.SetVersion(ver)
				if req.ReadFrom(body) == nil {
					for _, t := range req.Topics {
						if t.Topic == p.ch.topic || (t.TopicID != [16]byte{} && t.TopicID == p.ch.topicID) {
							for _, pt := range t.Partitions {
								if pt.Partition == 0 {
									q.fetchAt = pt.FetchOffset
								}
							}
						}
					}
				}
			case 8: // OffsetCommit
				req := kmsg.NewPtrOffsetCommitRequest()
				req.SetVersion(ver)
				if req.ReadFrom(body) == nil && req.Group == coservice.DurableName {
					for _, t := range req.Topics {
						if t.Topic == p.ch.topic || (t.TopicID != [16]byte{} && t.TopicID == p.ch.topicID) {
							for _, pt := range t.Partitions {
								if pt.Partition == 0 {
									commitAt = pt.Offset
								}
							}
						}
					}
					if commitAt >= 0 {
						acks = p.ch.covers(commitAt)
						commitReq = req
					}
				}
			}
			if q.fetchAt >= 0 {
				ev(coservice.Pull, 0, coservice.BeforeForward)
			}
			forward := true
			for _, s := range acks {
				if !ev(coservice.Ack, s, coservice.BeforeForward) {
					forward = false
				}
			}
			if !forward {
				// Answer the commit ourselves: every partition error 0.
				resp := commitReq.ResponseKind().(*kmsg.OffsetCommitResponse)
				for _, t := range commitReq.Topics {
					rt := kmsg.NewOffsetCommitResponseTopic()
					rt.Topic, rt.TopicID = t.Topic, t.TopicID
					for _, pt := range t.Partitions {
						rp := kmsg.NewOffsetCommitResponseTopicPartition()
						rp.Partition = pt.Partition
						rt.Partitions = append(rt.Partitions, rp)
					}
					resp.Topics = append(resp.Topics, rt)
				}
				if writeClient(responseFrame(corr, resp)) != nil {
					return
				}
				continue
			}
			mu.Lock()
			pending[corr] = q
			mu.Unlock()
			if _, err := up.Write(frame); err != nil {
				return
			}
			if q.fetchAt >= 0 {
				ev(coservice.Pull, 0, coservice.AfterForward)
			}
			if commitAt >= 0 {
				p.ch.commit(commitAt)
				for _, s := range acks {
					ev(coservice.Ack, s, coservice.AfterForward)
				}
			}
		}
	}
	toClient := func() {
		r := bufio.NewReader(up)
		for {
			frame, err := readFrame(r)
			if err != nil {
				return
			}
			if len(frame) < 8 {
				return
			}
			corr := int32(binary.BigEndian.Uint32(frame[4:8]))
			mu.Lock()
			q, ok := pending[corr]
			delete(pending, corr)
			mu.Unlock()
			var seqs []uint64
			var shared []shareDelivered
			if ok && (q.key == 3 || q.key == 10 || (q.key == 1 && q.fetchAt >= 0) || q.share || len(q.acks) > 0) {
				resp := kmsg.ResponseForKey(q.key)
				resp.SetVersion(q.ver)
				hdr := 8
				if resp.IsFlexible() {
					n, ok := skipTags(frame[8:])
					if !ok {
						return
					}
					hdr += n
				}
				if err := resp.ReadFrom(frame[hdr:]); err == nil {
					switch rr := resp.(type) {
					case *kmsg.MetadataResponse:
						for i := range rr.Brokers {
							b := &rr.Brokers[i]
							if h, pt, ok := p.rewrite(b.Host, b.Port); ok {
								b.Host, b.Port = h, pt
							}
						}
						frame = reencode(frame[:hdr], rr)
					case *kmsg.FindCoordinatorResponse:
						if rr.Host != "" {
							if h, pt, ok := p.rewrite(rr.Host, rr.Port); ok {
								rr.Host, rr.Port = h, pt
							}
						}
						for i := range rr.Coordinators {
							c := &rr.Coordinators[i]
							if h, pt, ok := p.rewrite(c.Host, c.Port); ok {
								c.Host, c.Port = h, pt
							}
						}
						frame = reencode(frame[:hdr], rr)
					case *kmsg.FetchResponse:
						seqs = fetchedSeqs(rr, p.ch, q.fetchAt)
					case *kmsg.ShareAcknowledgeResponse:
						if ackConfirmed(rr, p.ch.topicID) {
							p.ch.settle(q.acks)
						}
					case *kmsg.ShareFetchResponse:
						if len(q.acks) > 0 && ackConfirmed(rr, p.ch.topicID) {
							p.ch.settle(q.acks)
						}
						shared = sharedSeqs(rr, p.ch)
						if len(rr.NodeEndpoints) > 0 {
							// A partition's leader, reached through the worker's listener.
							for i := range rr.NodeEndpoints {
								e := &rr.NodeEndpoints[i]
								if h, pt, ok := p.rewrite(e.Host, e.Port); ok {
									e.Host, e.Port = h, pt
								}
							}
							frame = reencode(frame[:hdr], rr)
						}
					}
				}
			}
			for _, s := range seqs {
				ev(coservice.Deliver, s, coservice.BeforeForward)
			}
			for _, d := range shared {
				evd(d, coservice.BeforeForward)
			}
			if writeClient(frame) != nil {
				return
			}
			for _, s := range seqs {
				ev(coservice.Deliver, s, coservice.AfterForward)
			}
			for _, d := range shared {
				evd(d, coservice.AfterForward)
			}
		}
	}
	return toServer, toClient
}

// rewrite is the worker's listener for the broker at host:port.
func (p *kafkaProxy) rewrite(host string, port int32) (string, int32, bool) {
	target := net.JoinHostPort(host, strconv.Itoa(int(port)))
	r, err := p.ch.nodeRelay(p.worker, target, p.hook, p.nextID)
	if err != nil {
		return "", 0, false
	}
	a := r.ln.Addr().(*net.TCPAddr)
	return a.IP.String(), int32(a.Port), true
}

// fetchedSeqs are the sequences of the rule's records in a Fetch answer at
// or after the fetch offset.
func fetchedSeqs(rr *kmsg.FetchResponse, ch *kafkaChannel, from int64) []uint64 {
	var seqs []uint64
	for _, t := range rr.Topics {
		if t.Topic != ch.topic && (t.TopicID == [16]byte{} || t.TopicID != ch.topicID) {
			continue
		}
		for _, pt := range t.Partitions {
			if pt.Partition != 0 || pt.ErrorCode != 0 {
				continue
			}
			b := pt.RecordBatches
			for len(b) >= 12 {
				n := int(binary.BigEndian.Uint32(b[8:12]))
				if 12+n > len(b) {
					break // a partial batch at the end: the client ignores it
				}
				var rb kmsg.RecordBatch
				if rb.ReadFrom(b[:12+n]) == nil && rb.Attributes&0x20 == 0 { // not a control batch
					for o := rb.FirstOffset; o <= rb.FirstOffset+int64(rb.LastOffsetDelta); o++ {
						if o >= from {
							seqs = append(seqs, uint64(o)+1)
						}
					}
				}
				b = b[12+n:]
			}
		}
	}
	return seqs
}

func readFrame(r io.Reader) ([]byte, error) {
	var l [4]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(l[:])
	if n > 256<<20 {
		return nil, errors.New("a Kafka frame over 256 MiB")
	}
	f := make([]byte, 4+n)
	copy(f, l[:])
	_, err := io.ReadFull(r, f[4:])
	return f, err
}

// reencode is a fresh frame of the header hdr (length prefix included)
// and the rewritten response body, its length prefix fixed.
func reencode(hdr []byte, body interface{ AppendTo([]byte) []byte }) []byte {
	frame := body.AppendTo(append([]byte(nil), hdr...))
	fixLen(frame)
	return frame
}

func fixLen(frame []byte) { binary.BigEndian.PutUint32(frame, uint32(len(frame)-4)) }

// splitRequest reads a request frame's header: api key, version,
// correlation id and the body after the header.
func splitRequest(f []byte) (key, ver int16, corr int32, body []byte, ok bool) {
	if len(f) < 14 {
		return 0, 0, 0, nil, false
	}
	key = int16(binary.BigEndian.Uint16(f[4:6]))
	ver = int16(binary.BigEndian.Uint16(f[6:8]))
	corr = int32(binary.BigEndian.Uint32(f[8:12]))
	cl := int16(binary.BigEndian.Uint16(f[12:14]))
	i := 14
	if cl > 0 {
		i += int(cl)
	}
	if i > len(f) {
		return 0, 0, 0, nil, false
	}
	req := kmsg.RequestForKey(key)
	if req == nil {
		return key, ver, corr, nil, true
	}
	req.SetVersion(ver)
	if req.IsFlexible() {
		n, ok := skipTags(f[i:])
		if !ok {
			return 0, 0, 0, nil, false
		}
		i += n
	}
	return key, ver, corr, f[i:], true
}

// skipTags is the length of a tagged-fields section at the start of b.
func skipTags(b []byte) (int, bool) {
	cnt, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, false
	}
	i := n
	for ; cnt > 0; cnt-- {
		_, m := binary.Uvarint(b[i:])
		if m <= 0 {
			return 0, false
		}
		i += m
		sz, m := binary.Uvarint(b[i:])
		if m <= 0 || i+m+int(sz) > len(b) {
			return 0, false
		}
		i += m + int(sz)
	}
	return i, true
}

// responseFrame frames resp (its version set) as the answer to corr.
func responseFrame(corr int32, resp kmsg.Response) []byte {
	f := make([]byte, 8, 64)
	binary.BigEndian.PutUint32(f[4:], uint32(corr))
	if resp.IsFlexible() {
		f = append(f, 0)
	}
	f = resp.AppendTo(f)
	fixLen(f)
	return f
}
