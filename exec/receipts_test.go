package exec_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// fakeClock is a wall clock a test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// recordKinds counts the exactly-once records under root by kind: DDL
// tokens (root "ddl-receipts"), and under a table (root "t", table, tag)
// push markers (tag 7) and receipts (tag 14).
func recordKinds(t *testing.T, db kv.Database, root []byte) map[string]int {
	t.Helper()
	kinds := map[string]int{}
	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		clear(kinds)
		it := tr.GetRange(kv.PrefixRange(root), kv.RangeOptions{})
		for it.Next() {
			k, err := tuple.Unpack(it.KeyValue().Key[len(root):])
			require.NoError(t, err)
			switch {
			case len(k) >= 1 && k[0] == "ddl-receipts":
				kinds["ddl tokens"]++
			case len(k) >= 3 && k[0] == "t" && k[2] == int64(7):
				kinds["push markers"]++
			case len(k) >= 3 && k[0] == "t" && k[2] == int64(14):
				kinds["receipts"]++
			}
		}
		return it.Err()
	}))
	return kinds
}

// TestReceiptsExpire: the receipts that make statements exactly-once (DDL
// tokens, INSERT, pop and DELETE receipts) are kept for the executor's
// receipt lifetime, by its clock, and cleared once expired, so they do not
// pile up with the number of statements run. An INSERT writes one receipt,
// not a marker per row.
func TestReceiptsExpire(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	db := uncertain{embedded.Open("", embedded.Config{})}
	defer db.Close()
	root := tuple.Tuple{"r"}.Pack()
	e := exec.New(db, root, exec.WithClock(clock.Now), exec.WithReceiptTTL(time.Minute))

	// Within the lifetime every receipt is kept.
	mustRun(t, e, "CREATE TABLE q (priority INT NOT NULL, cpu INT NOT NULL, INDEX fit (cpu))")
	mustRun(t, e, "INSERT INTO q VALUES (1, 1), (2, 2), (3, 3)")
	mustRun(t, e, "SELECT priority FROM q WHERE cpu <= 4 LIMIT 1 FOR POP")
	mustRun(t, e, "DELETE FROM q ORDER BY priority LIMIT 1")
	require.Equal(t, map[string]int{"ddl tokens": 1, "receipts": 3}, recordKinds(t, db, root),
		"one DDL token; one receipt each for the INSERT of 3 rows, the pop and the DELETE")

	const ops = 40
	step := func(q string, args ...any) {
		t.Helper()
		clock.Advance(2 * time.Minute) // everything recorded so far has expired
		mustRun(t, e, q, args...)
	}
	for i := range ops {
		step(fmt.Sprintf("CREATE TABLE t%d (v INT)", i))
		step(fmt.Sprintf("DROP TABLE t%d", i))
	}
	for i := range ops {
		step("INSERT INTO q VALUES (?, ?)", int64(i%3), int64(1+i%4))
	}
	for range ops / 2 {
		step("SELECT priority FROM q WHERE cpu <= 4 LIMIT 1 FOR POP")
		step("DELETE FROM q ORDER BY priority LIMIT 1")
	}
	kinds := recordKinds(t, db, root)
	t.Logf("left after %d of each: %v", ops, kinds)
	for _, kind := range []string{"ddl tokens", "receipts"} {
		require.LessOrEqual(t, kinds[kind], 2, "%s: %v", kind, kinds)
		require.Positive(t, kinds[kind], "the newest has not expired: %v", kinds)
	}
	require.Zero(t, kinds["push markers"], "SQL INSERTs write no per-row markers")
}

// uncertain hides the embedded engine's CertainCommits: to exec it is a
// database whose commits may end in commit_unknown_result, as
// FoundationDB's may.
type uncertain struct{ kv.Database }

// certain claims its commits are certain whatever the database below does.
type certain struct{ kv.Database }

func (certain) CertainCommits() bool { return true }

// TestCertainCommitsWriteNoReceipts: on a database whose commits are
// certain (the embedded engine without injected faults), INSERT, pops and
// DELETE record no receipts: no retry ever needs them. DDL keeps its token.
func TestCertainCommitsWriteNoReceipts(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	require.True(t, kv.CommitsCertain(db))
	require.False(t, kv.CommitsCertain(embedded.Open("", embedded.Config{Faults: &embedded.Faults{UnknownApplied: 0.1}})))
	root := tuple.Tuple{"r"}.Pack()
	e := exec.New(db, root)
	mustRun(t, e, "CREATE TABLE q (priority INT NOT NULL, cpu INT NOT NULL, INDEX fit (cpu))")
	mustRun(t, e, "INSERT INTO q VALUES (1, 1), (2, 2), (3, 3)")
	mustRun(t, e, "SELECT priority FROM q WHERE cpu <= 4 LIMIT 1 FOR POP")
	mustRun(t, e, "DELETE FROM q ORDER BY priority LIMIT 1")
	require.Equal(t, map[string]int{"ddl tokens": 1}, recordKinds(t, db, root))
}

// TestNoRetryAfterUnknownWithoutReceipt: a statement that records no
// receipt (the database said its commits are certain) is not run again
// after a commit that may have been applied: it fails with the
// maybe-committed error instead of pushing its rows twice. Here half the
// commits apply and then report commit_unknown_result, behind a database
// that claims certainty: every INSERT, failed or not, adds its row once.
func TestNoRetryAfterUnknownWithoutReceipt(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{Faults: &embedded.Faults{Seed: 3, UnknownApplied: 0.5}})
	defer db.Close()
	e := exec.New(certain{db}, tuple.Tuple{"r"}.Pack())
	mustRun(t, e, "CREATE TABLE q (v INT)") // DDL keeps its token: retried safely
	const n = 40
	unknown := 0
	for i := range n {
		_, err := run(t, e, "INSERT INTO q VALUES (?)", int64(i))
		if err != nil {
			require.True(t, kv.IsMaybeCommitted(err), "%v", err)
			require.NotErrorIs(t, err, queues.ErrDuplicateID, "a retry ran the INSERT again")
			unknown++
		}
	}
	require.Positive(t, unknown)
	res := mustRun(t, e, "SELECT COUNT(*) FROM q")
	require.Equal(t, [][]any{{int64(n)}}, res.Rows, "each INSERT applied once")

	// Pops: each either returns its row or fails having maybe taken one;
	// a retry would take a second row and lose the first.
	popped, unknown := 0, 0
	for popped+unknown < 2*n {
		res, err := run(t, e, "SELECT v FROM q LIMIT 1 FOR POP")
		if err != nil {
			require.True(t, kv.IsMaybeCommitted(err), "%v", err)
			unknown++
			continue
		}
		if len(res.Rows) == 0 {
			break
		}
		popped++
	}
	require.Positive(t, unknown)
	require.Equal(t, n, popped+unknown, "every row popped was returned or reported as maybe popped")
}
