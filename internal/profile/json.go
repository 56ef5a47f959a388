package profile

import (
	"encoding/json"
	"fmt"
	"time"
)

// UnmarshalJSON reads what MarshalJSON writes ("5m0s"), so a results.json
// holding a plan reads back (tck report --in, tck report diff).
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: want a string such as \"5m0s\": %v", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %v", s, err)
	}
	*d = Duration(v)
	return nil
}
