package containers

import (
	"context"
	"os"
	"testing"
)

// RequireEnv is the variable that turns a missing Docker (or image) from a
// skip into a failure. CI sets it, so a green CI means the containers ran.
const RequireEnv = "TCK_REQUIRE_DOCKER"

// Need skips t, naming the reason, when Docker or one of the images is not
// available; with TCK_REQUIRE_DOCKER=1 it fails t instead.
func Need(t testing.TB, images ...string) {
	t.Helper()
	ctx := context.Background()
	reason := ""
	if err := Available(ctx); err != nil {
		reason = err.Error()
	} else {
		dc, err := Client(ctx)
		for _, img := range images {
			if err != nil {
				reason = err.Error()
				break
			}
			if _, err := dc.ImageInspect(ctx, img); err != nil {
				reason = "image " + img + " is not present locally; build it with `make images` (scripts/build-images.sh)"
				break
			}
		}
	}
	if reason == "" {
		return
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s=1 and the containers cannot run: %s", RequireEnv, reason)
	}
	t.Skip("needs Docker: " + reason)
}
