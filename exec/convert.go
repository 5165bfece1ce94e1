package exec

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/tuple"
)

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "NULL"
	case int64:
		return "integer"
	case float64:
		return "float"
	case string:
		return "string"
	case []byte:
		return "bytes"
	case bool:
		return "boolean"
	case time.Time:
		return "time"
	}
	return fmt.Sprintf("%T", v)
}

// convertRead is convert for a value its caller only reads, and only
// until the statement returns (an INSERT packs its row at once): a []byte
// for a BLOB column is passed on as it is, neither copied nor boxed
// again, where convert's copy and its boxing were two allocations a row.
func convertRead(col *Column, v any) (any, error) {
	if x, ok := v.([]byte); ok && col.Type == parser.TypeBlob && (col.Length == 0 || len(x) <= col.Length) {
		return v, nil
	}
	return convert(col, v)
}

// textBytes reports whether v, a value given for col, is a []byte that
// the TEXT column col takes as it is: valid UTF-8, within the column's
// length. insert packs it as the string it holds (packRow), where
// convert's string(x), and its boxing, were 2 of the 5 allocations a row
// of BenchmarkSQL/push100 (a []byte payload). Like convertRead's, it is
// for a value read only until the statement returns.
func textBytes(col *Column, v any) bool {
	x, ok := v.([]byte)
	return ok && col.Type == parser.TypeText && utf8.Valid(x) && (col.Length == 0 || utf8.RuneCount(x) <= col.Length)
}

// convert converts v to the Go type of col: int64, float64, string, []byte,
// bool or time.Time, or nil for NULL.
func convert(col *Column, v any) (any, error) {
	bad := func(why string) error {
		return fmt.Errorf("%w: column %s is %s; got %s %v%s", ErrValue, col.Name, col.Type, typeName(v), short(v), why)
	}
	if v == nil {
		return nil, nil
	}
	switch col.Type {
	case parser.TypeInt:
		switch x := v.(type) {
		case int64:
			// v as it is: boxing x again allocated for all but the
			// smallest numbers, 2 allocations a row of the bench's.
			return v, nil
		case float64:
			if x == math.Trunc(x) && x >= math.MinInt64 && x < math.MaxInt64 {
				return int64(x), nil
			}
			return nil, bad(" (not an integer)")
		case bool:
			if x {
				return int64(1), nil
			}
			return int64(0), nil
		case string:
			n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
			if err != nil {
				return nil, bad("")
			}
			return n, nil
		}
	case parser.TypeFloat:
		var f float64
		switch x := v.(type) {
		case float64:
			f = x
		case int64:
			f = float64(x)
		case string:
			var err error
			if f, err = strconv.ParseFloat(strings.TrimSpace(x), 64); err != nil {
				return nil, bad("")
			}
		default:
			return nil, bad("")
		}
		if math.IsNaN(f) {
			// NaN equals nothing, itself included, so no WHERE could find
			// the row again; and engines disagree on its order (MySQL
			// refuses it, PostgreSQL puts it above every number, SQLite
			// stores NULL). ±Inf are ordered numbers and are kept.
			return nil, bad(" (NaN is not stored: it equals nothing; use NULL for a missing value)")
		}
		if _, ok := v.(float64); ok {
			return v, nil // as for an int64
		}
		return f, nil
	case parser.TypeText:
		var s string
		switch x := v.(type) {
		case string:
			// TEXT is stored as a tuple string, which must be UTF-8 to be
			// read back.
			if !utf8.ValidString(x) {
				return nil, bad(" (not valid UTF-8; bytes go in a BLOB column)")
			}
			s = x
		case []byte:
			if !utf8.Valid(x) {
				return nil, bad(" (not valid UTF-8; bytes go in a BLOB column)")
			}
			s = string(x)
		case int64:
			s = strconv.FormatInt(x, 10)
		case float64:
			s = strconv.FormatFloat(x, 'g', -1, 64)
		case bool:
			s = strconv.FormatBool(x)
		default:
			return nil, bad("")
		}
		if col.Length > 0 && utf8.RuneCountInString(s) > col.Length {
			return nil, fmt.Errorf("%w: column %s holds at most %d characters; got %d", ErrValue, col.Name, col.Length, utf8.RuneCountInString(s))
		}
		if _, ok := v.(string); ok {
			return v, nil // as for an int64
		}
		return s, nil
	case parser.TypeBlob:
		var b []byte
		switch x := v.(type) {
		case []byte:
			b = bytes.Clone(x)
		case string:
			b = []byte(x)
		default:
			return nil, bad("")
		}
		if col.Length > 0 && len(b) > col.Length {
			return nil, fmt.Errorf("%w: column %s holds at most %d bytes; got %d", ErrValue, col.Name, col.Length, len(b))
		}
		return b, nil
	case parser.TypeBool:
		switch x := v.(type) {
		case bool:
			return x, nil
		case int64:
			if x == 0 || x == 1 {
				return x == 1, nil
			}
		case string:
			if b, err := strconv.ParseBool(strings.TrimSpace(x)); err == nil {
				return b, nil
			}
		}
	case parser.TypeTimestamp:
		var t time.Time
		switch x := v.(type) {
		case time.Time:
			t = x.UTC()
		case string:
			parsed := false
			for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02"} {
				var err error
				if t, err = time.Parse(layout, strings.TrimSpace(x)); err == nil {
					parsed, t = true, t.UTC()
					break
				}
			}
			if !parsed {
				return nil, bad(" (timestamps are time.Time or RFC 3339 text)")
			}
		default:
			return nil, bad("")
		}
		if t.Before(MinTimestamp) || t.After(MaxTimestamp) {
			return nil, fmt.Errorf("%w: column %s is TIMESTAMP, from %s to %s; got %s", ErrValue, col.Name, timeText(MinTimestamp), timeText(MaxTimestamp), timeText(t))
		}
		return t, nil
	}
	return nil, bad("")
}

func short(v any) string {
	s := fmt.Sprint(v)
	switch x := v.(type) {
	case []byte:
		s = fmt.Sprintf("%q", x)
	case string:
		if !utf8.ValidString(x) {
			s = fmt.Sprintf("%q", x)
		}
	}
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return s
}

// The range of a TIMESTAMP: the years 1 to 9999 (what RFC 3339 text
// writes, and SQL's TIMESTAMP), to the nanosecond. Go's zero time.Time is
// its first instant.
var (
	MinTimestamp = time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC)
	MaxTimestamp = time.Date(9999, time.December, 31, 23, 59, 59, 999999999, time.UTC)
)

// The times a TIMESTAMP stores as one int64 of unix nanoseconds (about
// 1677-09-21 to 2262-04-11): the encoding of every version before the
// range grew, kept so that their rows read back as they were.
var (
	minNanoTime = time.Unix(0, math.MinInt64)
	maxNanoTime = time.Unix(0, math.MaxInt64)
)

// timeText formats t as a TIMESTAMP reads back, for errors.
func timeText(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// encodeValue maps a column value onto a tuple element. A TIMESTAMP is
// its unix nanoseconds where an int64 holds them, and else the nested
// tuple (unix seconds, nanoseconds): exact over the whole range, and
// readable alongside rows written before.
func encodeValue(v any) any {
	if t, ok := v.(time.Time); ok {
		if t.Before(minNanoTime) || t.After(maxNanoTime) {
			return tuple.Tuple{t.Unix(), int64(t.Nanosecond())}
		}
		return t.UnixNano()
	}
	return v
}

// decodeValue maps a tuple element back onto a value of a column of type
// ty, or reports that the element cannot be one (a row not written by
// insert: by an older version, or another program).
func decodeValue(ty parser.Type, e any) (any, error) {
	if e == nil {
		return nil, nil
	}
	ok := false
	switch ty {
	case parser.TypeInt:
		_, ok = e.(int64)
	case parser.TypeFloat:
		if f, is32 := e.(float32); is32 {
			e = float64(f)
		}
		_, ok = e.(float64)
	case parser.TypeText:
		_, ok = e.(string)
	case parser.TypeBlob:
		_, ok = e.([]byte)
	case parser.TypeBool:
		_, ok = e.(bool)
	case parser.TypeTimestamp:
		switch x := e.(type) {
		case int64:
			return time.Unix(0, x).UTC(), nil
		case tuple.Tuple:
			if len(x) == 2 {
				sec, ok1 := x[0].(int64)
				nsec, ok2 := x[1].(int64)
				if ok1 && ok2 && nsec >= 0 && nsec < int64(time.Second) {
					return time.Unix(sec, nsec).UTC(), nil
				}
			}
		}
	}
	if !ok {
		return nil, fmt.Errorf("holds %s %s, not %s", typeName(e), short(e), ty)
	}
	return e, nil
}

// literal returns the Go value of a parsed literal.
func literal(v parser.Value) any {
	switch v.Kind {
	case parser.ValueInt:
		return v.Int
	case parser.ValueFloat:
		return v.Float
	case parser.ValueString:
		return v.Str
	case parser.ValueBytes:
		return []byte(v.Str)
	case parser.ValueBool:
		return v.Bool
	}
	return nil
}

// compare orders two non-NULL values of one column type.
func compare(a, b any) int {
	switch x := a.(type) {
	case int64:
		return cmpOrdered(x, b.(int64))
	case float64:
		return cmpOrdered(x, b.(float64))
	case string:
		return strings.Compare(x, b.(string))
	case []byte:
		return bytes.Compare(x, b.([]byte))
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case time.Time:
		return x.Compare(b.(time.Time))
	}
	return 0
}

// cmpOrdered orders two numbers. It is not for NaN, which has no order:
// see cond.match.
func cmpOrdered[T int64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
