package nats

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	natsgo "github.com/nats-io/nats.go"
)

// durationKeys are the configuration fields JetStream sends as
// nanoseconds: shown as durations.
var durationKeys = map[string]bool{
	"max_age": true, "duplicate_window": true, "ack_wait": true, "backoff": true,
	"idle_heartbeat": true, "inactive_threshold": true, "max_expires": true,
	"subject_delete_marker_ttl": true,
}

// rawSettings asks the server for a stream's or consumer's info on the
// JetStream API directly and flattens every field of its configuration to
// text: what the jetstream client's structs do not know yet (a later
// server's field) is listed too. subject is the API request's subject.
func rawSettings(ctx context.Context, nc *natsgo.Conn, subject string) (map[string]string, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	msg, err := nc.RequestWithContext(rctx, subject, nil)
	if err != nil {
		return nil, err
	}
	var info struct {
		Config map[string]json.RawMessage `json:"config"`
		Error  *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &info); err != nil {
		return nil, fmt.Errorf("the info answer is not JSON: %w", err)
	}
	if info.Error != nil {
		return nil, errors.New(info.Error.Description)
	}
	return flatten(info.Config), nil
}

// flatten writes each field as text; the two filter fields are one
// setting, filter_subjects (sorted; "" for none), as a consumer filters by
// either.
func flatten(cfg map[string]json.RawMessage) map[string]string {
	out := map[string]string{}
	var filters []string
	for k, raw := range cfg {
		switch k {
		case "filter_subject":
			var s string
			if json.Unmarshal(raw, &s) == nil && s != "" {
				filters = append(filters, s)
			}
			continue
		case "filter_subjects":
			var ss []string
			_ = json.Unmarshal(raw, &ss)
			filters = append(filters, ss...)
			continue
		}
		out[k] = text(k, raw)
	}
	if _, consumer := cfg["ack_policy"]; consumer {
		sort.Strings(filters)
		out["filter_subjects"] = strings.Join(filters, ", ")
	}
	return out
}

func text(key string, raw json.RawMessage) string {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return string(raw)
	}
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return number(key, x)
	case bool:
		return strconv.FormatBool(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			if n, ok := e.(json.Number); ok {
				parts[i] = number(key, n)
			} else if s, ok := e.(string); ok {
				parts[i] = s
			} else {
				b, _ := json.Marshal(e)
				parts[i] = string(b)
			}
		}
		return strings.Join(parts, ", ")
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func number(key string, n json.Number) string {
	if durationKeys[key] {
		if i, err := n.Int64(); err == nil {
			return time.Duration(i).String()
		}
	}
	return n.String()
}
