package driver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkHiddenRows reads the dashboard's page of leased rows, 50 of
// them, queued behind 100,000 visible rows, through database/sql on
// memory:. hidden is the statement as the dashboard writes it, which reads
// the hidden rows alone (scanHidden); scan the same rows through a bound
// before NOW(), which the full scan serves, as every such page did before.
func BenchmarkHiddenRows(b *testing.B) {
	db := open(b)
	_, err := db.Exec(`CREATE TABLE q (v INT NOT NULL)`)
	require.NoError(b, err)
	batch := "INSERT INTO q (v) VALUES (0)" + strings.Repeat(", (0)", 999)
	for range 100 {
		_, err := db.Exec(batch)
		require.NoError(b, err)
	}
	_, err = db.Exec("INSERT INTO q (v) VALUES (1)" + strings.Repeat(", (1)", 49))
	require.NoError(b, err)
	_, err = db.Exec(`SELECT v FROM q WHERE v = 1 LIMIT 50 FOR LEASE 3600`)
	require.NoError(b, err)
	for _, c := range []struct {
		name, where string
		args        []any
	}{
		{"hidden", "_visible_at > NOW() AND _lease != 0", nil},
		{"scan", "_visible_at > ? AND _lease != 0", []any{time.Now().Add(-time.Minute)}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				rows, err := db.Query("SELECT id, v, _visible_at, _lease FROM q WHERE "+c.where+" LIMIT 50", c.args...)
				require.NoError(b, err)
				n := 0
				for rows.Next() {
					n++
				}
				require.NoError(b, rows.Err())
				require.NoError(b, rows.Close())
				require.Equal(b, 50, n)
			}
		})
	}
}
