package gen

import (
	"time"

	"pgregory.net/rapid"
)

// Edge is a value just below a boundary where a consumer's representation
// of it may break, and the class that boundary is.
type Edge struct {
	Class string
	Below int64 // the last value before the boundary; Below+1 is past it
}

// The classes of version edges.
const (
	ClassDigits  = "decimal digits (string order)"
	ClassInt8    = "int8"
	ClassUint8   = "uint8"
	ClassInt16   = "int16"
	ClassUint16  = "uint16"
	ClassInt32   = "int32"
	ClassUint32  = "uint32"
	ClassFloat64 = "float64 exact integers (JSON numbers)"
)

// digitEdges are the last values of one more decimal digit: 9 -> 10 sorts
// "10" before "9" as text.
var digitEdges = []int64{9, 99, 999, 9999, 99999, 999999, 999999999}

// widthEdges are the largest values of the widths a consumer may store a
// version in, and 2^53, past which a float64 (a JSON number decoded
// without care) cannot tell v from v+1.
var widthEdges = []Edge{
	{ClassInt8, 127}, {ClassUint8, 255}, {ClassInt16, 32767}, {ClassUint16, 65535},
	{ClassInt32, 1<<31 - 1}, {ClassUint32, 1<<32 - 1}, {ClassFloat64, 1 << 53},
}

// DigitEdge generates the last version before one more decimal digit.
func DigitEdge() *rapid.Generator[Edge] {
	return rapid.Custom(func(t *rapid.T) Edge {
		return Edge{ClassDigits, rapid.SampledFrom(digitEdges).Draw(t, "digits")}
	})
}

// VersionEdge generates a version just below a boundary of any class: the
// digit edges and the width edges.
func VersionEdge() *rapid.Generator[Edge] {
	return rapid.OneOf(DigitEdge(), rapid.SampledFrom(widthEdges))
}

// The classes of calendar edges.
const (
	ClassHour  = "hour"
	ClassDay   = "day"
	ClassMonth = "month"
	ClassYear  = "year"
	ClassLeap  = "leap day"
)

// CalendarEdge is a calendar boundary (an instant in UTC) and its class:
// the largest unit whose value changes there.
type CalendarEdge struct {
	Class string
	At    time.Time
}

// Calendar generates calendar boundaries between 2025 and 2045: the top of
// an hour, a midnight, the first of a month, New Year, and the midnights
// around 29 February. Every class but hour is also a day boundary.
func Calendar() *rapid.Generator[CalendarEdge] { return rapid.OneOf(calendarEdges()...) }

// Midnight generates the calendar boundaries that are at least a day
// boundary (every class of Calendar but hour).
func Midnight() *rapid.Generator[CalendarEdge] { return rapid.OneOf(calendarEdges()[1:]...) }

func calendarEdges() []*rapid.Generator[CalendarEdge] {
	year := rapid.IntRange(2025, 2045)
	return []*rapid.Generator[CalendarEdge]{
		rapid.Custom(func(t *rapid.T) CalendarEdge {
			d := time.Date(year.Draw(t, "y"), time.Month(rapid.IntRange(1, 12).Draw(t, "m")), rapid.IntRange(1, 28).Draw(t, "d"),
				rapid.IntRange(1, 23).Draw(t, "h"), 0, 0, 0, time.UTC)
			return CalendarEdge{ClassHour, d}
		}),
		rapid.Custom(func(t *rapid.T) CalendarEdge {
			d := time.Date(year.Draw(t, "y"), time.Month(rapid.IntRange(1, 12).Draw(t, "m")), rapid.IntRange(2, 28).Draw(t, "d"), 0, 0, 0, 0, time.UTC)
			return CalendarEdge{ClassDay, d}
		}),
		rapid.Custom(func(t *rapid.T) CalendarEdge {
			d := time.Date(year.Draw(t, "y"), time.Month(rapid.IntRange(2, 12).Draw(t, "m")), 1, 0, 0, 0, 0, time.UTC)
			return CalendarEdge{ClassMonth, d}
		}),
		rapid.Custom(func(t *rapid.T) CalendarEdge {
			return CalendarEdge{ClassYear, time.Date(year.Draw(t, "y"), 1, 1, 0, 0, 0, 0, time.UTC)}
		}),
		rapid.Custom(func(t *rapid.T) CalendarEdge {
			y := rapid.SampledFrom([]int{2028, 2032, 2036, 2040, 2044}).Draw(t, "y")
			return CalendarEdge{ClassLeap, time.Date(y, 2, rapid.IntRange(29, 30).Draw(t, "d"), 0, 0, 0, 0, time.UTC)}
		}),
	}
}
