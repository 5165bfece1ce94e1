package driver_test

import (
	"database/sql"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
)

// Every time from the year 1 to 9999 is stored exactly, Go's zero time
// among them, and found by WHERE; what lies outside is refused by name.
func TestTimestampRange(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{"memory:", "file:" + t.TempDir()} {
		t.Run(dsn[:4], func(t *testing.T) {
			t.Parallel()
			db, err := sql.Open("fdbqueue", dsn)
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			_, err = db.Exec("CREATE TABLE e (name TEXT, ts TIMESTAMP)")
			require.NoError(t, err)

			times := map[string]time.Time{
				"zero":  {},
				"y1500": time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC),
				"y1677": time.Unix(0, math.MinInt64).Add(-1), // one before int64 nanoseconds
				"ns-lo": time.Unix(0, math.MinInt64),
				"epoch": time.Unix(0, 0),
				"now":   time.Date(2026, 11, 26, 5, 6, 7, 123456789, time.UTC),
				"ns-hi": time.Unix(0, math.MaxInt64),
				"y2262": time.Unix(0, math.MaxInt64).Add(1),
				"y2263": time.Date(2263, 1, 1, 0, 0, 0, 0, time.UTC),
				"y9999": time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
				"zone":  time.Date(3000, 6, 1, 12, 0, 0, 5, time.FixedZone("x", 3600)),
			}
			for name, ts := range times {
				_, err := db.Exec("INSERT INTO e (name, ts) VALUES (?, ?)", name, ts)
				require.NoError(t, err, name)
			}
			// Text goes through the same conversion as arguments.
			_, err = db.Exec("INSERT INTO e (name, ts) VALUES ('text1', '0001-01-01T00:00:00Z'), ('text9999', '9999-12-31T23:59:59Z')")
			require.NoError(t, err)
			times["text1"] = time.Time{}
			times["text9999"] = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

			read := func(q string, args ...any) map[string]time.Time {
				rows, err := db.Query(q, args...)
				require.NoError(t, err)
				defer rows.Close()
				got := map[string]time.Time{}
				for rows.Next() {
					var name string
					var ts time.Time
					require.NoError(t, rows.Scan(&name, &ts))
					got[name] = ts
				}
				require.NoError(t, rows.Err())
				return got
			}
			got := read("SELECT name, ts FROM e")
			require.Len(t, got, len(times))
			for name, want := range times {
				require.Truef(t, want.Equal(got[name]), "%s: stored %v, read %v", name, want, got[name])
			}
			require.True(t, got["zero"].IsZero(), "Go's zero time reads back as the zero time")

			after := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
			later := read("SELECT name, ts FROM e WHERE ts > ?", after)
			var want []string
			for name, ts := range times {
				if ts.After(after) {
					want = append(want, name)
				}
			}
			require.ElementsMatch(t, want, keys(later))

			for _, tc := range []struct {
				v    any
				want string
			}{
				{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), "column ts is TIMESTAMP, from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z; got 10000-01-01T00:00:00Z"},
				{time.Date(0, 12, 31, 23, 59, 59, 0, time.UTC), "column ts is TIMESTAMP, from 0001-01-01T00:00:00Z"},
				{"0000-06-01T00:00:00Z", "got 0000-06-01T00:00:00Z"},
			} {
				_, err := db.Exec("INSERT INTO e (name, ts) VALUES ('bad', ?)", tc.v)
				require.ErrorIs(t, err, fdbqueue.ErrValue)
				require.ErrorContains(t, err, tc.want)
			}
			require.EqualValues(t, len(times), count(t, db, "e"), "a refused row leaves nothing behind")
		})
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A delay or a lease that would end after 2262-04-11 (the latest time a
// row can stay hidden) is refused, with that limit: it never makes the row
// due at once, nor leaves it to another worker.
func TestVisibleAtRange(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec("CREATE TABLE jobs (priority INT NOT NULL, name TEXT)")
	require.NoError(t, err)

	const limit = "from 1970-01-01T00:00:00.000000001Z to 2262-04-11T23:47:16.854775807Z"
	for _, at := range []any{
		"2600-01-01T00:00:00Z",
		"2300-01-01T00:00:00Z",
		time.Unix(0, math.MaxInt64).Add(1),
		"1970-01-01T00:00:00Z",
		"1960-01-01T00:00:00Z",
	} {
		_, err := db.Exec("INSERT INTO jobs (priority, name, _visible_at) VALUES (1, 'x', ?)", at)
		require.ErrorIs(t, err, fdbqueue.ErrValue, "%v", at)
		require.ErrorContains(t, err, "_visible_at")
		require.ErrorContains(t, err, "is out of range: it is the zero time (visible at once) or a time "+limit)
		require.NotContains(t, err.Error(), "before 1970")
	}
	require.Zero(t, count(t, db, "jobs"))

	// The zero time (how a never-delayed row's _visible_at reads) and the
	// last instant are accepted: one is due at once, the other stays hidden.
	last := time.Unix(0, math.MaxInt64).UTC()
	_, err = db.Exec("INSERT INTO jobs (priority, name, _visible_at) VALUES (1, 'now', '0001-01-01T00:00:00Z'), (1, 'last', ?)", last)
	require.NoError(t, err)
	var name string
	var vis time.Time
	require.NoError(t, db.QueryRow("SELECT name, _visible_at FROM jobs WHERE name = 'last'").Scan(&name, &vis))
	require.True(t, last.Equal(vis), "read %v", vis)
	require.NoError(t, db.QueryRow("SELECT name FROM jobs LIMIT 1 FOR POP").Scan(&name))
	require.Equal(t, "now", name)
	require.ErrorIs(t, db.QueryRow("SELECT name FROM jobs LIMIT 1 FOR POP").Scan(&name), sql.ErrNoRows)

	// A heartbeat that parks a leased row past the limit is refused, and the
	// lease holds.
	_, err = db.Exec("INSERT INTO jobs (priority, name) VALUES (2, 'leased')")
	require.NoError(t, err)
	var id, lease int64
	require.NoError(t, db.QueryRow("SELECT id, _lease FROM jobs ORDER BY priority DESC LIMIT 1 FOR LEASE 60").Scan(&id, &lease))
	_, err = db.Exec("UPDATE jobs SET _visible_at = ? WHERE id = ? AND _lease = ?", time.Date(2600, 1, 1, 0, 0, 0, 0, time.UTC), id, lease)
	require.ErrorIs(t, err, fdbqueue.ErrValue)
	require.ErrorContains(t, err, limit)
	require.ErrorIs(t, db.QueryRow("SELECT id FROM jobs LIMIT 1 FOR LEASE 30").Scan(&id), sql.ErrNoRows, "the lease still hides the row")

	// Leases that would end after the limit are refused; a long one that
	// ends before it hides the row.
	_, err = db.Exec("INSERT INTO jobs (priority, name) VALUES (3, 'long')")
	require.NoError(t, err)
	for _, d := range []any{time.Duration(math.MaxInt64), 237 * 365 * 24 * time.Hour, float64(240 * 365 * 24 * 3600)} {
		err := db.QueryRow("SELECT id FROM jobs ORDER BY priority DESC LIMIT 1 FOR LEASE ?", d).Scan(&id)
		require.ErrorIs(t, err, fdbqueue.ErrValue, "%v", d)
		require.ErrorContains(t, err, "after 2262-04-11T23:47:16.854775807Z, the latest a lease can end")
	}
	require.NoError(t, db.QueryRow("SELECT id, _visible_at FROM jobs ORDER BY priority DESC LIMIT 1 FOR LEASE ?", 200*365*24*time.Hour).Scan(&id, &vis))
	require.Greater(t, vis.Year(), 2200)
	require.ErrorIs(t, db.QueryRow("SELECT id FROM jobs LIMIT 1 FOR LEASE 30").Scan(&id), sql.ErrNoRows, "a 200-year lease hides the row")
}
