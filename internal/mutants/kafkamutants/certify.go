package kafkamutants

import (
	"context"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/onceproof/tck/internal/mutants"
)

// Drift is a change made on a certified cluster behind its profile's back:
// adm reaches the cluster, topic and group are the declared ones.
type Drift func(ctx context.Context, adm *kadm.Client, topic, group string) error

// CertMutant is one certification mutant: the kit's own kfake holding the
// certified profile's topic and group (broker/kafka-certify, where BR-6.1
// passes) with one readable setting changed behind the profile.
type CertMutant = mutants.Mutant[Drift]

// Certification returns the Kafka certification mutants; each must fail
// BR-6.1 naming the setting, which proves its comparisons able to fail.
func Certification() []CertMutant {
	return []CertMutant{
		{
			Name: "certify-retention", Defect: "the certified topic's retention.ms was lowered on the cluster to 1h behind the profile, which declares 24h (maxAge): records the pipeline has not read yet are deleted after an hour",
			MustFail: []string{"BR-6.1"},
			Build:    alterTopic("retention.ms", "3600000"),
		},
		{
			Name: "certify-min-isr", Defect: "the certified topic's min.insync.replicas was raised on the cluster to 2 behind the profile, which declares 1: on a single-replica topic every acks=all produce is refused (NOT_ENOUGH_REPLICAS)",
			MustFail: []string{"BR-6.1"},
			Build:    alterTopic("min.insync.replicas", "2"),
		},
		{
			Name: "certify-group-past-end", Defect: "the certified group's committed offset was set by hand to 1000 behind the profile, past the log's end: the records produced up to it are never consumed by the group",
			MustFail: []string{"BR-6.1"},
			Build: func(ctx context.Context, adm *kadm.Client, topic, group string) error {
				o := kadm.Offsets{}
				o.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1000, LeaderEpoch: -1})
				r, err := adm.CommitOffsets(ctx, group, o)
				if err != nil {
					return err
				}
				return r.Error()
			},
		},
	}
}

func alterTopic(key, value string) Drift {
	return func(ctx context.Context, adm *kadm.Client, topic, _ string) error {
		rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: key, Value: &value}}, topic)
		if err != nil {
			return err
		}
		return rs[0].Err
	}
}
