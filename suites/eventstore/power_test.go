package eventstore

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/catalog"
)

func TestPowerArithmetic(t *testing.T) {
	for _, c := range []struct {
		p    float64
		want int
	}{{0.01, 459}, {0.05, 90}, {0.001, 4603}} {
		n := contendedFor(c.p)
		if n != c.want {
			t.Errorf("contendedFor(%g) = %d, want %d", c.p, n, c.want)
		}
		if got := powerOf(n); got > c.p || powerOf(n-1) <= c.p {
			t.Errorf("powerOf(%d) = %g: %d is not the smallest count reaching %g", n, got, n, c.p)
		}
	}
}

// The catalog states the power targets the defaults give.
func TestCatalogStatesThePowerTargets(t *testing.T) {
	full, weak := contendedFor(defaultPower), contendedFor(5*defaultPower)
	for _, r := range catalog.All("eventstore") {
		if !strings.HasPrefix(r.ID, "ES-2.") {
			continue
		}
		want, floor := full, raceFloor(defaultPower)
		if r.ID == "ES-2.4" || r.ID == "ES-2.6" {
			want, floor = weak, raceFloor(5*defaultPower)
		}
		if !strings.Contains(r.Contract, fmt.Sprintf("Power target: %d contended trials", want)) {
			t.Errorf("%s: the catalog does not state the power target of %d contended trials: %s", r.ID, want, r.Contract)
		}
		if !strings.Contains(r.Contract, fmt.Sprintf("floor of %d", floor)) {
			t.Errorf("%s: the catalog does not state the floor of %d contended trials: %s", r.ID, floor, r.Contract)
		}
	}
}

func TestContendedMeansOverlapInTime(t *testing.T) {
	at := func(spans ...[2]time.Duration) []attempt {
		var out []attempt
		for _, s := range spans {
			out = append(out, attempt{start: s[0], end: s[1]})
		}
		return out
	}
	if contended(at([2]time.Duration{0, 10}, [2]time.Duration{10, 20}, [2]time.Duration{30, 40}), false) {
		t.Error("calls one after another counted as contended")
	}
	if !contended(at([2]time.Duration{30, 40}, [2]time.Duration{0, 100}), false) {
		t.Error("a call inside another not counted as contended")
	}
	if contended(at([2]time.Duration{0, 10}), false) {
		t.Error("one call counted as contended")
	}
}
