package ui_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/ui"
)

// BenchmarkOverview is what the page's overview costs a refresh: a read
// of fdbqueue_queues over 10 tables, and the series of 300 samples.
func BenchmarkOverview(b *testing.B) {
	db := open(b, "memory:")
	for i := range 10 {
		_, err := db.Exec(fmt.Sprintf(`CREATE TABLE t%d (v INT NOT NULL) MAX_ATTEMPTS=3`, i))
		require.NoError(b, err)
		_, err = db.Exec(fmt.Sprintf(`INSERT INTO t%d (v) VALUES (1), (2), (3)`, i))
		require.NoError(b, err)
	}
	srv := serve(b, ui.Handler(db))
	b.ResetTimer()
	for b.Loop() {
		res, err := http.Get(srv.URL + "/queues/api/overview")
		require.NoError(b, err)
		res.Body.Close()
	}
}

// BenchmarkRowsPage reads a page of 50 rows of a table of 100,000 visible
// rows: the visible state's first page, and the leased state's, whose one
// leased row comes after every visible one in queue order (the worst
// case: the scan reads the whole table).
func BenchmarkRowsPage(b *testing.B) {
	db := open(b, "memory:")
	_, err := db.Exec(`CREATE TABLE q (v INT NOT NULL)`)
	require.NoError(b, err)
	for i := 0; i < 100_000; i += 1000 {
		stmt := "INSERT INTO q (v) VALUES (0)"
		for j := 1; j < 1000; j++ {
			stmt += ", (0)"
		}
		_, err := db.Exec(stmt)
		require.NoError(b, err)
	}
	_, err = db.Exec(`INSERT INTO q (v) VALUES (1)`)
	require.NoError(b, err)
	_, err = db.Exec(`SELECT v FROM q WHERE v = 1 LIMIT 1 FOR LEASE 3600`)
	require.NoError(b, err)
	srv := serve(b, ui.Handler(db))
	for _, state := range []string{"visible", "leased"} {
		b.Run(state, func(b *testing.B) {
			for b.Loop() {
				res, err := http.Get(srv.URL + "/queues/api/tables/q/rows?limit=50&state=" + state)
				require.NoError(b, err)
				require.Equal(b, http.StatusOK, res.StatusCode)
				res.Body.Close()
			}
		})
	}
}
