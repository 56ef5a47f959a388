package registry

import (
	"fmt"
	"sort"
	"strings"

	"github.com/onceproof/tck/internal/profile"
)

// natsStreamSettings are a declared stream's settings BR-6.1 compares by
// the server's own names (mq.TopicInfo.Settings), each left out filled
// with the NATS default so that it is compared too.
func natsStreamSettings(s profile.Stream) map[string]string {
	return map[string]string{
		"discard":              orS(string(s.Discard), string(profile.DiscardOld)),
		"max_msgs":             limitText(s.MaxMsgs),
		"max_bytes":            limitText(s.MaxBytes),
		"max_msgs_per_subject": limitText(s.MaxMsgsPerSubject),
		"max_msg_size":         limitText(s.MaxMsgSize),
		"allow_atomic":         fmt.Sprint(s.AllowAtomic),
	}
}

// natsConsumerSettings are a declared consumer's, as natsStreamSettings.
func natsConsumerSettings(c profile.BrokerConsumer) map[string]string {
	filters := append([]string(nil), c.FilterSubjects...)
	sort.Strings(filters)
	map_ := c.MaxAckPending
	if map_ == 0 {
		map_ = profile.NATSDefaultMaxAckPending
	}
	return map[string]string{
		"filter_subjects": strings.Join(filters, ", "),
		"deliver_policy":  orS(string(c.DeliverPolicy), string(profile.DeliverAll)),
		"replay_policy":   orS(string(c.ReplayPolicy), string(profile.ReplayInstant)),
		"max_ack_pending": fmt.Sprint(map_),
	}
}

// limitText is a NATS limit as the server reports it: -1 for unlimited.
func limitText(n int) string {
	if n <= 0 {
		return "-1"
	}
	return fmt.Sprint(n)
}

// natsWorkers are the declared workers per broker consumer of broker b.
func natsWorkers(p *profile.Profile, b profile.Broker) map[string]int {
	out := map[string]int{}
	for _, s := range b.Streams {
		for _, c := range s.Consumers {
			if w := p.Workers(b.Name, s.Name, c.Name); w > 0 {
				out[s.Name+"/"+c.Name] = w
			}
		}
	}
	return out
}

// settingsText appends declared settings by the server's names to a
// configuration line: ", discard old, max_msgs -1".
func settingsText(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		v := m[k]
		if v == "" {
			v = "(none)"
		}
		fmt.Fprintf(&b, ", %s %s", k, v)
	}
	return b.String()
}
