package eventstore_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/onceproof/tck/suites/eventstore"
)

// TestWithGinkgo runs the same rules inside a Ginkgo suite of yours. Each
// rule is a spec labelled with its id, suite and level. A rule the kit
// cannot decide fails the suite; pass eventstore.UnknownIsSkip() to Register
// to report it as a skip instead.
func TestWithGinkgo(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "my event store: onceproof conformance")
}

var _ = Describe("my event store", func() {
	eventstore.Register(myTarget())
})
