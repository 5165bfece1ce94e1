package exec

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
)

// TestBackoffDelay: the n-th attempt's delay is first·2^(n-1) up to max
// (or the constant), less at most a quarter; the same for the same row and
// attempt, spread across rows; none without BACKOFF or from MAX_ATTEMPTS
// on.
func TestBackoffDelay(t *testing.T) {
	t.Parallel()
	exp := &Table{Backoff: &parser.Backoff{Exponential: true, First: time.Second, Max: time.Minute}}
	for n := int64(1); n <= 12; n++ {
		want := min(time.Second<<(n-1), time.Minute)
		for id := int64(1); id <= 200; id++ {
			d := exp.backoffDelay(id, n)
			require.LessOrEqual(t, d, want, "attempt %d of row %d", n, id)
			require.GreaterOrEqual(t, d, want-want/4, "attempt %d of row %d", n, id)
			require.Equal(t, d, exp.backoffDelay(id, n), "deterministic")
		}
	}
	// Spread: rows failed together do not come back together.
	seen := map[time.Duration]bool{}
	var lo, hi time.Duration = time.Hour, 0
	for id := int64(1); id <= 1000; id++ {
		d := exp.backoffDelay(id, 3)
		seen[d] = true
		lo, hi = min(lo, d), max(hi, d)
	}
	require.Greater(t, len(seen), 990)
	require.Less(t, lo, 3100*time.Millisecond, "near 3 s: 4 s less a quarter")
	require.Greater(t, hi, 3900*time.Millisecond)
	// Huge attempt counts (a restored row) stay at max.
	require.LessOrEqual(t, exp.backoffDelay(7, 1<<62), time.Minute)

	constant := &Table{Backoff: &parser.Backoff{First: 30 * time.Second, Max: 30 * time.Second}}
	for n := int64(1); n <= 5; n++ {
		d := constant.backoffDelay(9, n)
		require.True(t, d > 22*time.Second && d <= 30*time.Second, "%v", d)
	}
	require.Zero(t, (&Table{}).backoffDelay(1, 1), "no BACKOFF")
	require.Zero(t, exp.backoffDelay(1, 0), "never leased")
	capped := &Table{MaxAttempts: 3, Backoff: exp.Backoff}
	require.NotZero(t, capped.backoffDelay(1, 2))
	require.Zero(t, capped.backoffDelay(1, 3), "its next lease moves it to the dead letters")
}

// TestBackoffSchemaRoundTrip: the options are stored in the schema and
// read back, with and without MAX_ATTEMPTS; Options prints them as
// CREATE TABLE takes them, and they parse back to the same.
func TestBackoffSchemaRoundTrip(t *testing.T) {
	t.Parallel()
	for _, sql := range []string{
		"CREATE TABLE t (v TEXT) BACKOFF=EXPONENTIAL(0.25 SECOND, 90 MINUTE)",
		"CREATE TABLE t (v TEXT) MAX_ATTEMPTS=4 BACKOFF=CONSTANT(30 SECOND)",
		"CREATE TABLE t (v TEXT) MAX_ATTEMPTS=4",
		"CREATE TABLE t (v TEXT)",
	} {
		p, err := parser.Parse(sql)
		require.NoError(t, err)
		ct := p.Stmt.(*parser.CreateTable)
		tb := &Table{Name: "t", ID: 1, Priority: -1, Columns: []Column{{Name: "v", Type: parser.TypeText}}, MaxAttempts: ct.MaxAttempts, Backoff: ct.Backoff}
		got, err := decodeTable([]byte("r"), queues.Options{}, tb.encode())
		require.NoError(t, err, sql)
		require.Equal(t, tb.MaxAttempts, got.MaxAttempts, sql)
		require.Equal(t, tb.Backoff, got.Backoff, sql)
		again, err := parser.Parse("CREATE TABLE t (v TEXT) " + got.Options())
		require.NoError(t, err, got.Options())
		require.Equal(t, ct, again.Stmt, "%s prints as %q", sql, got.Options())
	}
}
