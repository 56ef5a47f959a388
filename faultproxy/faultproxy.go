// Package faultproxy is a TCP proxy on loopback that sits between a client
// and a broker and injects faults: drop the broker's reply to one chosen
// request (seed 002's "publish ack lost"), cut every connection, or delay
// the broker-to-client direction.
package faultproxy

// Splitter returns the length of the first complete protocol frame in buf,
// or 0 when buf does not yet hold a whole frame.
type Splitter func(buf []byte) int

// Match picks a frame.
type Match func(frame []byte) bool
