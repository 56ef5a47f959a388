package mq

import "time"

// This file holds optional interfaces any broker with a per-group pending
// list may implement beyond Broker: the list itself, read back, and a cut
// of a topic to its newest entries. Redis Streams has both (XPENDING,
// XTRIM); the interfaces are named by capability, not by Redis, so another
// broker with the same mechanisms implements them too.

// Pending is one entry of a consumer group's pending list: delivered to a
// member, not yet acknowledged (Redis: one XPENDING extended-form row).
type Pending struct {
	Position string `json:"position"` // where the entry is stored (Redis: the entry id)
	// Member is the group member that holds the entry now (Redis: the
	// consumer name); a claim moves it to another.
	Member string        `json:"member"`
	Idle   time.Duration `json:"idle"` // since it was last delivered or claimed
	// Deliveries is the broker's delivery counter for the entry (Redis:
	// the times-delivered field, raised by XREADGROUP, XCLAIM, XAUTOCLAIM).
	Deliveries int `json:"deliveries"`
}

// Trim is what a broker said about a cut of a topic.
type Trim struct {
	// Command is the command the broker was sent, e.g. "XTRIM <key> MAXLEN = 2";
	// a report names it as the cause of what the cut removed.
	Command string `json:"command"`
	// Removed is how many stored messages the broker replied it removed.
	Removed int `json:"removed"`
	// KeepsPending is the adapter's claim that the cut never removes a
	// message still pending in a group (Redis 7's XTRIM does not keep
	// them).
	KeepsPending bool `json:"keepsPending"`
}
