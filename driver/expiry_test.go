package driver_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// TestRetryRecordsExpire: the push markers, pop and DELETE receipts and DDL
// tokens that make statements exactly-once are cleaned up once they
// expire, so they do not pile up with the number of statements run.
//
// Not parallel: it shortens queues.MarkerTTL for the whole process (Go
// runs the parallel tests only after the sequential ones).
func TestRetryRecordsExpire(t *testing.T) {
	saved := queues.MarkerTTL
	queues.MarkerTTL = time.Millisecond
	defer func() { queues.MarkerTTL = saved }()

	name := "expiry-" + t.Name()
	db, err := sql.Open("fdbqueue", "memory:"+name)
	require.NoError(t, err)
	defer db.Close()
	raw := embedded.Open(name, embedded.Config{}) // the same database
	defer raw.Close()

	const ops = 40
	exec := func(q string, args ...any) {
		t.Helper()
		time.Sleep(2 * time.Millisecond) // everything recorded so far has expired
		_, err := db.Exec(q, args...)
		require.NoError(t, err, q)
	}
	for i := range ops {
		exec(fmt.Sprintf("CREATE TABLE t%d (v INT)", i))
		exec(fmt.Sprintf("DROP TABLE t%d", i))
	}
	exec("CREATE TABLE q (priority INT NOT NULL, cpu INT NOT NULL, INDEX fit (cpu))")
	for i := range ops {
		exec("INSERT INTO q VALUES (?, ?)", i%3, 1+i%4)
	}
	for range ops / 2 {
		exec("SELECT priority FROM q WHERE cpu <= 4 LIMIT 1 FOR POP")
		exec("DELETE FROM q ORDER BY priority LIMIT 1")
	}

	// Count the records by kind: (fdbqueue, ddl, ...) and, under a table,
	// (fdbqueue, t, table, tag, ...) with tags 7 (markers) and 9 (receipts).
	kinds := map[string]int{}
	require.NoError(t, raw.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
		clear(kinds)
		it := tr.GetRange(kv.PrefixRange(nil), kv.RangeOptions{})
		for it.Next() {
			k, err := tuple.Unpack(it.KeyValue().Key)
			require.NoError(t, err)
			switch {
			case len(k) >= 2 && k[1] == "ddl":
				kinds["ddl tokens"]++
			case len(k) >= 4 && k[1] == "t" && k[3] == int64(7):
				kinds["push markers"]++
			case len(k) >= 4 && k[1] == "t" && k[3] == int64(9):
				kinds["receipts"]++
			}
		}
		return it.Err()
	}))
	t.Logf("left after %d of each: %v", ops, kinds)
	for _, kind := range []string{"ddl tokens", "push markers", "receipts"} {
		require.LessOrEqual(t, kinds[kind], 2, "%s: %v", kind, kinds)
	}
	require.Positive(t, kinds["push markers"], "the newest marker has not expired")
}
