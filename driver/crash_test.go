package driver_test

import (
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/internal/crashtest"
)

// crashChild is the child process of TestCrashRecovery: it pushes and pops
// through the SQL driver, printing "try push N" / "try pop" before each
// statement and "push N" / "pop N" / "empty" once it returned, until killed.
func crashChild(dir string, base int, seed uint64) {
	db, err := sql.Open("fdbqueue", "file:"+dir)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	if _, err := db.Exec("CREATE TABLE IF NOT EXISTS q (v INT NOT NULL)"); err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println("ready")
	r := rand.New(rand.NewPCG(seed, 1))
	for i := 0; ; i++ {
		if r.IntN(3) < 2 {
			n := base + i
			fmt.Println("try push", n)
			if _, err := db.Exec("INSERT INTO q (v) VALUES (?)", n); err != nil {
				fmt.Println("error", err)
				os.Exit(2)
			}
			fmt.Println("push", n)
			continue
		}
		fmt.Println("try pop")
		var v int
		err := db.QueryRow("SELECT v FROM q LIMIT 1 FOR POP").Scan(&v)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			fmt.Println("empty")
		case err != nil:
			fmt.Println("error", err)
			os.Exit(2)
		default:
			fmt.Println("pop", v)
		}
	}
}

func TestCrashRecovery(t *testing.T) {
	if dir := os.Getenv("FDBQUEUE_CRASH_CHILD"); dir != "" {
		base, _ := strconv.Atoi(os.Getenv("FDBQUEUE_CRASH_BASE"))
		crashChild(dir, base, uint64(base))
		return
	}
	rounds := crashtest.Rounds(15)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	present := map[int]bool{} // the queue's contents, as last verified
	for round := 0; round < rounds; round++ {
		base := (round + 1) * 1_000_000
		child := crashtest.Start(t, "TestCrashRecovery", "FDBQUEUE_CRASH_CHILD="+dir, fmt.Sprint("FDBQUEUE_CRASH_BASE=", base))

		pushed, popped := map[int]bool{}, map[int]bool{}
		inflight := ""
		child.Read(t, func(l string) {
			f := strings.Fields(l)
			switch f[0] {
			case "ready": // let the child run for a random while
				child.KillAfter(time.Duration(20+r.IntN(200)) * time.Millisecond)
			case "try":
				inflight = l
			case "push":
				n, _ := strconv.Atoi(f[1])
				pushed[n], inflight = true, ""
			case "pop":
				n, _ := strconv.Atoi(f[1])
				popped[n], inflight = true, ""
			case "empty":
				inflight = ""
			case "error":
				t.Fatalf("round %d: child failed: %s", round, l)
			}
		})
		_ = child.Wait()

		// Reopen and compare with what the child acknowledged.
		db, err := sql.Open("fdbqueue", "file:"+dir)
		require.NoError(t, err)
		got := map[int]bool{}
		rows, err := db.Query("SELECT v FROM q")
		require.NoError(t, err)
		for rows.Next() {
			var v int
			require.NoError(t, rows.Scan(&v))
			got[v] = true
		}
		require.NoError(t, rows.Err())
		require.NoError(t, db.Close())

		want := map[int]bool{}
		for v := range present {
			want[v] = true
		}
		for v := range pushed {
			want[v] = true
		}
		for v := range popped {
			require.True(t, want[v], "round %d: popped %d, which was never pushed", round, v)
			delete(want, v)
			require.False(t, got[v], "round %d: acknowledged pop of %d is back", round, v)
		}
		missing := 0
		for v := range want {
			if !got[v] {
				missing++
			}
		}
		extra := 0
		for v := range got {
			if !want[v] {
				extra++
				require.Equal(t, fmt.Sprint("try push ", v), inflight, "round %d: %d is there but was never pushed", round, v)
			}
		}
		switch {
		case missing > 0:
			require.Equal(t, 1, missing, "round %d: %d acknowledged items lost", round, missing)
			require.Equal(t, "try pop", inflight, "round %d: an item is missing without a pop in flight", round)
		case extra > 0:
			require.Equal(t, 1, extra)
		}
		present = got
		t.Logf("round %d: %d pushes and %d pops acknowledged, in flight %q, %d queued", round, len(pushed), len(popped), inflight, len(got))
	}
}
