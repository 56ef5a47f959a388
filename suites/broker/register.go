package broker

import (
	"time"

	"github.com/onsi/ginkgo/v2"
)

// Register registers every BR rule against t. Call it inside a Ginkgo suite
// (before RunSpecs), once per target.
func Register(t Target) {
	t.Windows = t.Windows.withDefaults()
	if t.Budget <= 0 {
		t.Budget = 60 * time.Second
	}
	ginkgo.Describe("broker", ginkgo.Ordered, func() {})
}
