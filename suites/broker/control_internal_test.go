package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/stall"
)

// BR-1.4's reason for a control id still dropped at 1.2 of the window: the
// kit's lateness is named, as the likely cause, only when it is as long as
// the excess less the tolerance; otherwise the reason says the window
// lasted longer on this topic, never that BR-1.2 found it longer.
func TestControlDroppedNamesTheKitsLateness(t *testing.T) {
	W, tol, at := 2*time.Second, 250*time.Millisecond, 2400*time.Millisecond
	for _, tc := range []struct {
		name  string
		late  stall.Span
		named bool // the stall package's wording, as the cause
	}{
		{"scheduled throughout", stall.Span{}, false},
		{"late by more than the excess less the tolerance", stall.Span{Lag: 300 * time.Millisecond}, true},
		{"paused long enough", stall.Span{Count: 1, Total: time.Second, Longest: stall.Pause{Len: time.Second}, Lag: time.Second}, true},
		{"late, but by too little", stall.Span{Lag: 50 * time.Millisecond}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why := controlDropped(W, tol, at, tc.late, "pos=3 duplicate")
			t.Log(why)
			cause := strings.Contains(why, "enough to account for it")
			if cause != tc.named || (tc.named && !stall.Named(why)) {
				t.Errorf("lateness %+v: named as the cause %v, want %v: %s", tc.late, cause, tc.named, why)
			}
			if strings.Contains(why, "longer than declared (BR-1.2)") {
				t.Errorf("the reason claims BR-1.2's finding: %s", why)
			}
			if !strings.Contains(why, "400ms longer than declared") {
				t.Errorf("the reason does not say by how much the window was longer: %s", why)
			}
		})
	}
}
