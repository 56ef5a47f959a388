// Package reference is the api suite's reference service: an HTTP order
// service in Go (net/http) backed by the kit's SQLite event store, whose
// own constraint decides "first or repeat" inside its atomic write. It
// implements the kit's default endpoint description under either contract:
// reject-409 (a repeat is 409 problem+json, the original unchanged) or
// replay (a repeat gets the first response byte for byte, another payload
// 422). `tck run` runs the api suite against it under both.
package reference

import (
	"context"

	"github.com/onceproof/tck/internal/apidesc"
	"github.com/onceproof/tck/internal/apiservice"
)

// Server is a running service: URL, Restart (abrupt, same port and
// database), Stop (also removes its database).
type Server = apiservice.Server

// Start starts the reference service under contract c on a free loopback
// port, with a fresh database in a temporary directory.
func Start(ctx context.Context, c apidesc.Contract) (*Server, error) {
	return apiservice.Start(ctx, c, "")
}
