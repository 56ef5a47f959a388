package registry

import (
	"context"

	"github.com/onceproof/tck/adapters/broker/mutants"
	"github.com/onceproof/tck/internal/target"
)

// addBrokerMutants registers every broken broker client, each in front of
// a real embedded NATS.
func addBrokerMutants(r *target.Registry) {
	for _, m := range mutants.All() {
		m := m
		r.Add(target.Kind{
			Suite: "broker", Name: "mutant-" + m.Name,
			Summary: "mutant: " + m.Summary,
			Modes:   []target.Mode{target.Embedded},
			Needs:   "nothing",
			Mutant:  true, MustFail: m.MustFail,
			Start: func(ctx context.Context, ref target.Ref) (*target.Started, error) {
				client := NATSClient{Wrap: m.Wrap, Declare: m.Declare}
				if m.Options != nil {
					m.Options(&client.Options)
				}
				st, err := NATSEmbedded(ctx, ref, client)
				if err != nil {
					return nil, err
				}
				st.Info.Mutant = true
				st.Info.Notes = append(st.Info.Notes, "mutant: "+m.Summary)
				return st, nil
			},
		})
	}
}
