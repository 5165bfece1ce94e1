package driver_test

import (
	"bytes"
	"database/sql"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLargestRowsLeaseAndPopWithReceipts: on an engine whose commits are
// uncertain (FoundationDB; here memory: with a negligible fault_unknown
// rate), every pop and lease records a receipt of the rows it took, their
// values in it. The largest rows INSERT accepts, of ordinary bytes and of
// zero bytes (which the row's tuple escapes), can be leased and popped:
// a receipt that packed the value once more made the second ~135,000
// bytes, over the engine's value limit, and the row could never leave
// the head of its queue.
func TestLargestRowsLeaseAndPopWithReceipts(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("fdbqueue", "memory:?fault_unknown=0.0000001&fault_seed=1")
	require.NoError(t, err)
	defer db.Close()
	for _, fill := range []byte{'a', 0} {
		_, err = db.Exec("DROP TABLE IF EXISTS m")
		require.NoError(t, err)
		_, err = db.Exec("CREATE TABLE m (b BLOB)")
		require.NoError(t, err)
		// The largest row INSERT accepts: accepted at lo, refused at hi.
		lo, hi := 1, 100_001
		for hi-lo > 1 {
			mid := (lo + hi) / 2
			if _, err = db.Exec("INSERT INTO m (b) VALUES (?)", bytes.Repeat([]byte{fill}, mid)); err == nil {
				lo = mid
			} else {
				hi = mid
			}
		}
		n := lo
		require.Greater(t, n, 40_000, "fill %q", fill)
		_, err = db.Exec("DELETE FROM m")
		require.NoError(t, err)
		for range 2 {
			_, err = db.Exec("INSERT INTO m (b) VALUES (?)", bytes.Repeat([]byte{fill}, n))
			require.NoError(t, err)
		}
		for _, q := range []string{"SELECT b FROM m LIMIT 1 FOR LEASE 30", "SELECT b FROM m LIMIT 1 FOR POP"} {
			var b []byte
			require.NoError(t, db.QueryRow(q).Scan(&b), "%s: a row of %d bytes %q", q, n, fill)
			require.Equal(t, bytes.Repeat([]byte{fill}, n), b)
		}
	}
}

// TestZeroHeavyRowForwardedPop: on a file: database shared by two
// processes, the second's pops are forwarded to the first, which runs
// them under a token, with a receipt: a row of 45,000 zero bytes is
// popped there too.
func TestZeroHeavyRowForwardedPop(t *testing.T) {
	if os.Getenv("FDBQUEUE_TEST_FORWARD_DIR") != "" {
		t.Skip("the child runs TestZeroHeavyRowForwardedPopChild")
	}
	dir := t.TempDir()
	srv, err := sql.Open("fdbqueue", "file:"+dir+"?sync=none")
	require.NoError(t, err)
	defer srv.Close()
	_, err = srv.Exec("CREATE TABLE m (b BLOB)")
	require.NoError(t, err)
	_, err = srv.Exec("INSERT INTO m (b) VALUES (?)", make([]byte, 45_000))
	require.NoError(t, err)

	cmd := exec.Command(os.Args[0], "-test.run=^TestZeroHeavyRowForwardedPopChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "FDBQUEUE_TEST_FORWARD_DIR="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the client process pops the row:\n%s", out)
	require.Contains(t, string(out), "--- PASS: TestZeroHeavyRowForwardedPopChild")
}

func TestZeroHeavyRowForwardedPopChild(t *testing.T) {
	dir := os.Getenv("FDBQUEUE_TEST_FORWARD_DIR")
	if dir == "" {
		t.Skip("run by TestZeroHeavyRowForwardedPop")
	}
	cl, err := sql.Open("fdbqueue", "file:"+dir+"?sync=none")
	require.NoError(t, err)
	defer cl.Close()
	var b []byte
	require.NoError(t, cl.QueryRow("SELECT b FROM m LIMIT 1 FOR POP").Scan(&b))
	require.Equal(t, make([]byte, 45_000), b)
}
