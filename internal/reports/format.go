package reports

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/onceproof/tck/internal/verdict"
)

// Figures are shown to the resolution they were measured at, never with the
// nine decimals a float64 of seconds carries: the kit's clocks and waits
// resolve milliseconds, so seconds get three decimals at most.

// figureText renders one figure's value with its unit.
func figureText(f verdict.Figure) string {
	v := valueText(f.Value, f.Unit)
	if f.Unit == "" {
		return v
	}
	return v + " " + f.Unit
}

func valueText(v any, unit string) string {
	switch x := v.(type) {
	case float64:
		return number(x, unit)
	case float32:
		return number(float64(x), unit)
	case int, int64, int32, uint, uint64, uint32:
		return fmt.Sprint(x)
	case bool:
		return strconv.FormatBool(x)
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = valueText(e, unit)
		}
		return strings.Join(parts, ", ")
	case []int:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = strconv.Itoa(e)
		}
		return strings.Join(parts, ", ")
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// number rounds by unit: seconds to the millisecond, milliseconds to the
// millisecond (a tenth below 10 ms), anything else to four significant digits.
func number(x float64, unit string) string {
	if x == math.Trunc(x) && math.Abs(x) < 1e15 {
		return strconv.FormatInt(int64(x), 10)
	}
	switch unit {
	case "s":
		return trimZeros(strconv.FormatFloat(x, 'f', 3, 64))
	case "ms":
		if math.Abs(x) < 10 {
			return trimZeros(strconv.FormatFloat(x, 'f', 1, 64))
		}
		return strconv.FormatFloat(math.Round(x), 'f', 0, 64)
	}
	return trimZeros(strconv.FormatFloat(x, 'g', 4, 64))
}

func trimZeros(s string) string {
	if !strings.Contains(s, ".") || strings.ContainsAny(s, "eE") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// offsetFormat picks the resolution of a timeline's offsets from its span:
// a history of seconds is read to the millisecond, one of microseconds to
// the microsecond.
func offsetFormat(span time.Duration) func(time.Duration) string {
	switch {
	case span >= time.Second:
		return func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) + " s" }
	case span >= 10*time.Millisecond:
		return func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 1, 64) + " ms" }
	}
	return func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64) + " ms" }
}

// durationText is a duration for a heading or a label, rounded to what the
// kit measures (a millisecond), written compactly ("2 s", "1.5 s", "250 ms",
// "5 min", "24 h").
func durationText(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d%time.Hour == 0:
		return fmt.Sprintf("%d h", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%d min", d/time.Minute)
	case d >= time.Minute:
		return trimZeros(strconv.FormatFloat(d.Minutes(), 'f', 1, 64)) + " min"
	case d >= time.Second:
		return trimZeros(strconv.FormatFloat(d.Round(time.Millisecond).Seconds(), 'f', 3, 64)) + " s"
	case d >= time.Millisecond:
		return trimZeros(strconv.FormatFloat(float64(d)/1e6, 'f', 1, 64)) + " ms"
	}
	return trimZeros(strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64)) + " µs"
}

// runDuration is a whole run's or rule's wall time.
func runDuration(ms float64) string {
	switch {
	case ms >= 10000:
		return strconv.FormatFloat(ms/1000, 'f', 1, 64) + " s"
	case ms >= 1000:
		return strconv.FormatFloat(ms/1000, 'f', 2, 64) + " s"
	}
	return strconv.FormatFloat(math.Round(ms), 'f', 0, 64) + " ms"
}
