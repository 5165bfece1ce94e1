package driver_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestArgumentsOfConcurrentConnections: each connection reuses one array
// for its statements' arguments. Connections running statements at once,
// each with arguments of its own (one INSERT of many rows, one query of a
// row by its values), store and find their own rows, and a statement's
// arguments are not those the one before it on the connection gave.
// Under -race, an array shared between connections is a race.
func TestArgumentsOfConcurrentConnections(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec("CREATE TABLE a (conn INT NOT NULL, n INT NOT NULL, s TEXT, b BLOB)")
	require.NoError(t, err)
	const conns, rounds, rows = 4, 20, 10
	var wg sync.WaitGroup
	for c := range conns {
		wg.Go(func() {
			conn, err := db.Conn(bg)
			if !assert.NoError(t, err) {
				return
			}
			defer conn.Close()
			for r := range rounds {
				args := make([]any, 0, 4*rows)
				q := "INSERT INTO a (conn, n, s, b) VALUES "
				for i := range rows {
					if i > 0 {
						q += ", "
					}
					q += "(?, ?, ?, ?)"
					n := r*rows + i
					args = append(args, c, n, fmt.Sprintf("c%d/%d", c, n), []byte(fmt.Sprintf("b%d/%d", c, n)))
				}
				if _, err := conn.ExecContext(bg, q, args...); !assert.NoError(t, err) {
					return
				}
				// Fewer arguments than the INSERT's: the array's
				// rest must not count.
				n := r*rows + r%rows
				var s string
				var b []byte
				err := conn.QueryRowContext(bg, "SELECT s, b FROM a WHERE conn = ? AND n = ?", c, n).Scan(&s, &b)
				if !assert.NoError(t, err) {
					return
				}
				if s != fmt.Sprintf("c%d/%d", c, n) || string(b) != fmt.Sprintf("b%d/%d", c, n) {
					t.Errorf("conn %d, n %d: got %q, %q", c, n, s, b)
					return
				}
			}
		})
	}
	wg.Wait()
	var count int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM a").Scan(&count))
	require.Equal(t, conns*rounds*rows, count)
	for c := range conns {
		var want []string
		for n := range rounds * rows {
			want = append(want, fmt.Sprintf("c%d/%d", c, n))
		}
		rows, err := db.Query("SELECT s FROM a WHERE conn = ?", c)
		require.ElementsMatch(t, want, column[string](t, rows, err), "conn %d", c)
	}
}
