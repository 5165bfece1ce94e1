package exec

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// A TIMESTAMP that int64 nanoseconds hold is stored as they were before
// the range grew, so that rows written by earlier versions read back the
// same; the rest are exact as (seconds, nanoseconds), and both round-trip
// through a packed row.
func TestTimestampEncoding(t *testing.T) {
	t.Parallel()
	in := time.Date(2026, 11, 26, 5, 6, 7, 123456789, time.UTC)
	require.Equal(t, in.UnixNano(), encodeValue(in), "the encoding of earlier versions")
	for _, ts := range []time.Time{
		MinTimestamp, time.Time{}.UTC(), time.Unix(0, math.MinInt64).Add(-1), time.Unix(0, math.MinInt64),
		time.Unix(0, -1), time.Unix(0, 0), in, time.Unix(0, math.MaxInt64), time.Unix(0, math.MaxInt64).Add(1), MaxTimestamp,
	} {
		packed := tuple.Tuple{encodeValue(ts.UTC())}.Pack()
		back, err := tuple.Unpack(packed)
		require.NoError(t, err)
		got, err := decodeValue(parser.TypeTimestamp, back[0])
		require.NoError(t, err)
		require.Truef(t, ts.Equal(got.(time.Time)), "stored %v, read %v", ts, got)
	}
	for _, bad := range []any{tuple.Tuple{int64(1)}, tuple.Tuple{int64(1), int64(-1)}, tuple.Tuple{int64(1), int64(time.Second)}, tuple.Tuple{"x", int64(0)}} {
		_, err := decodeValue(parser.TypeTimestamp, bad)
		require.Error(t, err, "%v is not a timestamp", bad)
	}
}
