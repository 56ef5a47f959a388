// Package example shows how a backend author runs the event-store
// conformance suite against their own store from a plain `go test`:
// see store_test.go. The store here is the kit's in-memory reference,
// standing in for yours.
package example
