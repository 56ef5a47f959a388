package redismutants

import (
	"context"

	goredis "github.com/redis/go-redis/v9"

	"github.com/onceproof/tck/internal/mutants"
)

// Drift is a change made on a certified server behind its profile's back:
// rdb reaches the server, key and group are the declared stream key and
// group.
type Drift func(ctx context.Context, rdb *goredis.Client, key, group string) error

// CertMutant is one certification mutant: a redis-server of the kit's own
// holding the certified profile's stream key and group
// (broker/redis-certify, where BR-6.1 passes) with one readable setting
// changed behind the profile.
type CertMutant = mutants.Mutant[Drift]

// Certification returns the Redis certification mutants; each must fail
// BR-6.1 naming what changed, which proves its comparisons able to fail.
func Certification() []CertMutant {
	return []CertMutant{
		{
			Name: "certify-maxmemory-policy", Defect: "the server's maxmemory-policy was set to allkeys-lru behind the profile, which declares noeviction: at maxmemory Redis may evict the stream key whole",
			MustFail: []string{"BR-6.1"},
			Build:    configSet("maxmemory-policy", "allkeys-lru"),
		},
		{
			Name: "certify-appendfsync", Defect: "the server's appendfsync was set to everysec behind the profile, which declares always: XADD answers before the entry is on disk",
			MustFail: []string{"BR-6.1"},
			Build:    configSet("appendfsync", "everysec"),
		},
		{
			Name: "certify-group-moved", Defect: "the certified group was moved to the stream's end (XGROUP SETID $ ENTRIESREAD 1) behind the profile: the entries it had not read are never delivered to it",
			MustFail: []string{"BR-6.1"},
			Build: func(ctx context.Context, rdb *goredis.Client, key, group string) error {
				return rdb.Do(ctx, "XGROUP", "SETID", key, group, "$", "ENTRIESREAD", 1).Err()
			},
		},
	}
}

func configSet(key, value string) Drift {
	return func(ctx context.Context, rdb *goredis.Client, _, _ string) error {
		return rdb.ConfigSet(ctx, key, value).Err()
	}
}
