// Package eventstore shows how a backend author runs the event-store
// conformance suite against their own store. Copy the two test files:
//
//   - store_test.go runs the suite from a plain `go test` with
//     eventstore.Check: every rule is a subtest named by its id, so
//     `go test -run 'TestMyStore/ES-1.5' -v` runs one rule, and a rule the
//     kit cannot decide fails the test with its reason.
//   - ginkgo_test.go registers the same rules in a Ginkgo suite with
//     eventstore.Register, for authors who keep one; label filters select
//     rules (`ginkgo --label-filter=ES-2.1`).
//
// The store here is the kit's in-memory reference, standing in for yours.
package eventstore
