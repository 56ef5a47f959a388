package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/onceproof/tck/mq"
)

// ShareBrokerSettings are the cluster's share-group defaults (KIP-932
// broker configs) ShareServer reads.
var ShareBrokerSettings = []string{"group.share.record.lock.duration.ms", "group.share.delivery.count.limit"}

// ShareGroupSettings are the group configs ShareGroup reads (KIP-932,
// KIP-1240; errors.deadletterqueue.topic.name from Kafka 4.4, KIP-1191).
var ShareGroupSettings = []string{"share.record.lock.duration.ms", "share.delivery.count.limit", "errors.deadletterqueue.topic.name"}

// ShareServer reads ShareBrokerSettings from every broker (DescribeConfigs),
// as Server reads BrokerSettings.
func (in *Inspector) ShareServer(ctx context.Context) (map[string]string, error) {
	bs, err := in.adm.ListBrokers(ctx)
	if err != nil {
		return nil, fmt.Errorf("the cluster's brokers: %w", err)
	}
	rcs, err := in.adm.DescribeBrokerConfigs(ctx, bs.NodeIDs()...)
	if err != nil {
		return nil, fmt.Errorf("DescribeConfigs of the brokers: %w", err)
	}
	vals := map[string]map[string]bool{}
	for _, rc := range rcs {
		if rc.Err != nil {
			return nil, fmt.Errorf("DescribeConfigs of broker %s: %w", rc.Name, rc.Err)
		}
		for _, c := range rc.Configs {
			if vals[c.Key] == nil {
				vals[c.Key] = map[string]bool{}
			}
			vals[c.Key][c.MaybeValue()] = true
		}
	}
	out := map[string]string{}
	for _, k := range ShareBrokerSettings {
		var vs []string
		for v := range vals[k] {
			vs = append(vs, v)
		}
		sort.Strings(vs)
		switch len(vs) {
		case 0:
			out[k] = "not served by this cluster's DescribeConfigs"
		case 1:
			out[k] = vs[0]
		default:
			out[k] = "brokers differ: " + strings.Join(vs, " / ")
		}
	}
	return out, nil
}

// ShareGroup reads share group name: its state and members
// (DescribeShareGroups) and its group configs (DescribeConfigs of the
// GROUP resource) by Kafka's names; a group config the cluster does not
// set reads as "" (the cluster's default applies). A group the cluster
// does not know is not found.
func (in *Inspector) ShareGroup(ctx context.Context, name string) (mq.ConsumerInfo, error) {
	adm, ok := in.adm.(*kadm.Client)
	if !ok || in.cl == nil {
		return mq.ConsumerInfo{}, errors.New("share group " + name + ": this inspector cannot describe share groups")
	}
	dg, err := adm.DescribeShareGroups(ctx, name)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return mq.ConsumerInfo{}, fmt.Errorf("DescribeShareGroups %s: %w", name, err)
	}
	g, found := dg[name]
	if !found || errors.Is(g.Err, kerr.GroupIDNotFound) || g.GroupState == "Dead" {
		return mq.ConsumerInfo{}, fmt.Errorf("share group %s: %w", name, mq.ErrNotFound)
	}
	if g.Err != nil {
		return mq.ConsumerInfo{}, fmt.Errorf("DescribeShareGroups %s: %w", name, g.Err)
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, name
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, in.cl)
	if err != nil {
		return mq.ConsumerInfo{}, fmt.Errorf("DescribeConfigs of group %s: %w", name, err)
	}
	var members []string
	for _, m := range g.Members {
		members = append(members, m.ClientID)
	}
	sort.Strings(members)
	s := map[string]string{"state": g.GroupState, "members": strings.Join(members, ", ")}
	for _, r := range resp.Resources {
		if e := kerr.ErrorForCode(r.ErrorCode); e != nil {
			return mq.ConsumerInfo{}, fmt.Errorf("DescribeConfigs of group %s: %w", name, e)
		}
		for _, c := range r.Configs {
			for _, k := range ShareGroupSettings {
				if c.Name == k {
					v := ""
					if c.Value != nil && c.Source != kmsg.ConfigSourceDefaultConfig {
						v = *c.Value
					}
					s[k] = v
				}
			}
		}
	}
	return mq.ConsumerInfo{Config: mq.ConsumerConfig{Group: name}, Settings: s}, nil
}
