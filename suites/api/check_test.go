package api_test

import (
	"context"
	"testing"

	"github.com/onceproof/tck/adapters/api/reference"
	"github.com/onceproof/tck/suites/api"
)

// The reference service conforms under both contracts, restart included.
func TestReference(t *testing.T) {
	for _, c := range []api.Contract{api.Reject409, api.Replay} {
		t.Run(string(c), func(t *testing.T) {
			srv, err := reference.Start(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := srv.Stop(); err != nil {
					t.Error(err)
				}
			})
			if err := api.Probe(context.Background(), srv.URL(), api.Default(c)); err != nil {
				t.Fatal(err)
			}
			// A 10% power target: this checks the mechanics and stays
			// decided on a loaded runner; tck run uses the full target.
			api.Check(t, api.Target{URL: srv.URL(), Desc: api.Default(c), Restart: srv.Restart, Race: api.RaceConfig{Power: 0.1}})
		})
	}
}
