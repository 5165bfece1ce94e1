package exec_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/parser"
)

const popFit = "SELECT id, cpu, mem FROM t WHERE cpu <= ? AND mem <= ? ORDER BY priority LIMIT 1 FOR POP"

// TestCombinedPopsTakeEveryRowOnce: consumers popping concurrently, each
// with its own limits, run in groups (one transaction each), and still
// every row is popped exactly once, by a consumer it fits, and in a
// group's order each pop sees the pops before it.
func TestCombinedPopsTakeEveryRowOnce(t *testing.T) {
	t.Parallel()
	e := newExec(t, []byte("c"))
	var groups, combined atomic.Int64
	var maxGroup atomic.Int64
	e.OnGroup(func(n int) {
		groups.Add(1)
		if n > 1 {
			combined.Add(int64(n))
		}
		raiseTo(&maxGroup, int64(n))
		// Hold the first groups a moment, so that the others queue.
		if groups.Load() < 20 {
			time.Sleep(time.Millisecond)
		}
	})
	mustRun(t, e, "CREATE TABLE t (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, INDEX fit (cpu, mem))")
	const rows = 3000
	r := rand.New(rand.NewPCG(1, 2))
	res := map[int64][2]int64{}
	for range rows / 100 {
		sql := "INSERT INTO t (priority, cpu, mem) VALUES (?, ?, ?)" + strings.Repeat(", (?, ?, ?)", 99)
		var args []any
		for range 100 {
			args = append(args, r.Int64N(10), 1+r.Int64N(8), 1+r.Int64N(32))
		}
		mustRun(t, e, sql, args...)
	}
	rs := mustRun(t, e, "SELECT id, cpu, mem FROM t")
	for _, row := range rs.Rows {
		res[row[0].(int64)] = [2]int64{row[1].(int64), row[2].(int64)}
	}
	require.Len(t, res, rows)

	p, err := parser.Parse(popFit)
	require.NoError(t, err)
	var mu sync.Mutex
	popped := map[int64]int{}
	var wg sync.WaitGroup
	for c := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), 3))
			// A consumer that fits any row stops after 3 empty pops;
			// one with random limits after 30 (rows may remain that
			// it does not fit: the others take them).
			empty, enough := 0, 3
			if c%2 == 1 {
				enough = 30
			}
			for empty < enough {
				cpu, mem := int64(8), int64(32)
				if c%2 == 1 { // half the consumers have random limits
					cpu, mem = 1+r.Int64N(8), 1+r.Int64N(32)
				}
				got, err := e.Auto(bg, p, exec.Args{Positional: []any{cpu, mem}})
				if !assert.NoError(t, err) {
					return
				}
				if len(got.Rows) == 0 {
					empty++
					continue
				}
				row := got.Rows[0]
				id := row[0].(int64)
				if row[1].(int64) > cpu || row[2].(int64) > mem {
					t.Errorf("row %d (cpu %d, mem %d) popped by a consumer with cpu %d, mem %d", id, row[1], row[2], cpu, mem)
				}
				mu.Lock()
				popped[id]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Len(t, popped, rows, "every row popped")
	for id, n := range popped {
		require.Equal(t, 1, n, "row %d popped %d times", id, n)
		_, ok := res[id]
		require.True(t, ok, "row %d was never inserted", id)
	}
	require.Empty(t, mustRun(t, e, "SELECT id FROM t").Rows)
	require.Greater(t, maxGroup.Load(), int64(1), "no pops ran in a group")
	t.Logf("%d groups, %d pops in groups of more than one, the largest %d", groups.Load(), combined.Load(), maxGroup.Load())
}

// TestCombinedPopCancelledWhileQueued: a pop whose context ends while it
// waits for a running group returns the context's error and takes
// nothing; the group's pops are not disturbed.
func TestCombinedPopCancelledWhileQueued(t *testing.T) {
	t.Parallel()
	e := newExec(t, []byte("c"))
	leaders := exec.MaxLeaders()
	inGroup, release := make(chan struct{}, leaders), make(chan struct{})
	var held atomic.Int64
	var armed atomic.Bool // once the rows are in
	e.OnGroup(func(int) {
		if armed.Load() && held.Add(1) <= int64(leaders) {
			inGroup <- struct{}{}
			<-release
		}
	})
	mustRun(t, e, "CREATE TABLE t (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, INDEX fit (cpu, mem))")
	for i := range leaders + 1 {
		mustRun(t, e, "INSERT INTO t (priority, cpu, mem) VALUES (?, 1, 1)", int64(i))
	}
	p, err := parser.Parse(popFit)
	require.NoError(t, err)
	args := exec.Args{Positional: []any{int64(8), int64(32)}}
	armed.Store(true)

	popped := make(chan *exec.Result, leaders)
	for range leaders {
		go func() {
			res, err := e.Auto(bg, p, args)
			assert.NoError(t, err)
			popped <- res
		}()
	}
	for range leaders {
		<-inGroup // every group this table may run at once is running
	}
	ctx, cancel := context.WithCancel(bg)
	queued := make(chan error)
	go func() {
		_, err := e.Auto(ctx, p, args)
		queued <- err
	}()
	time.Sleep(10 * time.Millisecond) // let it queue (if it did not yet, it still fails: its context ends first)
	cancel()
	require.ErrorIs(t, <-queued, context.Canceled)
	close(release)
	for range leaders {
		require.Len(t, (<-popped).Rows, 1)
	}
	left := mustRun(t, e, "SELECT cpu FROM t")
	require.Len(t, left.Rows, 1, "the cancelled pop took nothing")
}

// TestCombinedInsertsAndAFailingOne: INSERTs from many goroutines run in
// groups; each gets its own id, every row lands once, and an INSERT that
// fails on its own (a NULL for a NOT NULL column) in a group gets its error
// and leaves the others' rows alone.
func TestCombinedInsertsAndAFailingOne(t *testing.T) {
	t.Parallel()
	e := newExec(t, []byte("c"))
	var maxGroup atomic.Int64
	var groups atomic.Int64
	e.OnGroup(func(n int) {
		raiseTo(&maxGroup, int64(n))
		if groups.Add(1) < 20 {
			time.Sleep(time.Millisecond) // let the others queue
		}
	})
	mustRun(t, e, "CREATE TABLE t (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, note TEXT NOT NULL)")
	ins, err := parser.Parse("INSERT INTO t (priority, cpu, mem, note) VALUES (?, ?, ?, ?)")
	require.NoError(t, err)
	const writers, each = 16, 40
	var mu sync.Mutex
	ids := map[int64]string{}
	var bad atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				note := any(fmt.Sprintf("%d.%d", w, i))
				if i%10 == 3 {
					note = nil // fails: note is NOT NULL
				}
				res, err := e.Auto(bg, ins, exec.Args{Positional: []any{int64(i % 10), int64(1), int64(1), note}})
				if note == nil {
					if err == nil {
						t.Errorf("an INSERT of a NULL note succeeded")
					}
					bad.Add(1)
					continue
				}
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				if _, dup := ids[res.LastInsertID]; dup {
					t.Errorf("id %d given twice", res.LastInsertID)
				}
				ids[res.LastInsertID] = note.(string)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Equal(t, int64(writers*each/10), bad.Load())
	rows := mustRun(t, e, "SELECT id, note FROM t").Rows
	require.Len(t, rows, len(ids), "the failing INSERTs left nothing, the others one row each")
	for _, row := range rows {
		require.Equal(t, ids[row[0].(int64)], row[1].(string), "row %d", row[0])
	}
	require.Greater(t, maxGroup.Load(), int64(1), "no INSERTs ran in a group")
}

// raiseTo sets m to n if n is larger.
func raiseTo(m *atomic.Int64, n int64) {
	for v := m.Load(); n > v && !m.CompareAndSwap(v, n); v = m.Load() {
	}
}

// TestCombinedInsertGroupsRunSideBySide: INSERTs into one table combine in
// as many groups at once as Go has processors, although pops of the table
// run in fewer groups: one held group of INSERTs does not hold up the
// others.
func TestCombinedInsertGroupsRunSideBySide(t *testing.T) {
	t.Parallel()
	e := newExec(t, []byte("c"))
	leaders := exec.MaxInsertLeaders()
	require.GreaterOrEqual(t, leaders, exec.MaxLeaders())
	inGroup, release := make(chan struct{}, leaders), make(chan struct{})
	var armed atomic.Bool
	e.OnGroup(func(int) {
		if armed.Load() {
			inGroup <- struct{}{}
			<-release
		}
	})
	mustRun(t, e, "CREATE TABLE t (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, INDEX fit (cpu, mem))")
	p, err := parser.Parse("INSERT INTO t (priority, cpu, mem) VALUES (1, 1, 1)")
	require.NoError(t, err)
	armed.Store(true)
	done := make(chan error, leaders)
	for range leaders {
		go func() {
			_, err := e.Auto(bg, p, exec.Args{})
			done <- err
		}()
	}
	for i := range leaders {
		select {
		case <-inGroup:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d groups of INSERTs ran at once; want %d", i, leaders)
		}
	}
	armed.Store(false)
	close(release)
	for range leaders {
		require.NoError(t, <-done)
	}
	require.Len(t, mustRun(t, e, "SELECT id FROM t").Rows, leaders)
}

// TestCombinedStatementWithEndedContext: a statement that combines, run
// with a context that already ended, returns the context's error and does
// nothing; it used to panic, with no statement left in its group.
func TestCombinedStatementWithEndedContext(t *testing.T) {
	t.Parallel()
	e := newExec(t, []byte("c"))
	mustRun(t, e, "CREATE TABLE t (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, INDEX fit (cpu, mem))")
	mustRun(t, e, "INSERT INTO t (priority, cpu, mem) VALUES (1, 1, 1)")
	ctx, cancel := context.WithCancel(bg)
	cancel()
	for _, q := range []string{popFit, "INSERT INTO t (priority, cpu, mem) VALUES (2, 2, 2)"} {
		p, err := parser.Parse(q)
		require.NoError(t, err)
		var args exec.Args
		if q == popFit {
			args = exec.Args{Positional: []any{int64(8), int64(32)}}
		}
		_, err = e.Auto(ctx, p, args)
		require.ErrorIs(t, err, context.Canceled, q)
	}
	require.Len(t, mustRun(t, e, "SELECT cpu FROM t").Rows, 1, "nothing popped, nothing inserted")
}

// slowDisk is a database whose commits, once armed, wait for a disk until
// released: each calls its OnCommitQueued function first, as a file
// database's commits do before their fsync.
type slowDisk struct {
	kv.Database
	armed   atomic.Bool
	waiting atomic.Int64 // commits waiting for the disk
	release chan struct{}
}

func (*slowDisk) CertainCommits() bool { return true }

func (d *slowDisk) CreateTransaction(ctx context.Context) (kv.Transaction, error) {
	tr, err := d.Database.CreateTransaction(ctx)
	return &slowTxn{Transaction: tr, d: d}, err
}

type slowTxn struct {
	kv.Transaction
	d      *slowDisk
	queued func()
}

func (t *slowTxn) OnCommitQueued(queued func()) { t.queued = queued }

func (t *slowTxn) Commit() error {
	if t.d.armed.Load() {
		if t.queued != nil {
			t.queued()
		}
		t.d.waiting.Add(1)
		<-t.d.release
	}
	return t.Transaction.Commit()
}

// TestCombinedInsertsHandOffWhileCommitting: a group of INSERTs whose
// commit waits only for the disk lets the next group start (as many run at
// once as maxInsertLeaders allows): statements that arrive meanwhile share
// the next fsync instead of waiting for this one to end. Groups of pops
// keep the lead until they return.
func TestCombinedInsertsHandOffWhileCommitting(t *testing.T) {
	t.Parallel()
	mem := embedded.Open("", embedded.Config{})
	defer mem.Close()
	db := &slowDisk{Database: mem, release: make(chan struct{})}
	e := exec.New(db, []byte("c"))
	mustRun(t, e, "CREATE TABLE t (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, INDEX fit (cpu, mem))")
	p, err := parser.Parse("INSERT INTO t (priority, cpu, mem) VALUES (1, 1, 1)")
	require.NoError(t, err)
	db.armed.Store(true)
	release := sync.OnceFunc(func() { close(db.release) })
	defer release() // also when the test fails
	leaders := exec.MaxInsertLeaders()
	n := leaders + 4
	done := make(chan error, n)
	for range n {
		go func() {
			_, err := e.Auto(bg, p, exec.Args{})
			done <- err
		}()
	}
	require.Eventually(t, func() bool { return db.waiting.Load() > int64(leaders) }, 10*time.Second, time.Millisecond,
		"%d groups of INSERTs hold the lead while their commits wait for the disk", leaders)
	release()
	for range n {
		require.NoError(t, <-done)
	}
	require.Len(t, mustRun(t, e, "SELECT id FROM t").Rows, n)

	// Pops: a group after one that has not landed would pass over its
	// rows and conflict with it.
	db.release = make(chan struct{})
	db.waiting.Store(0)
	release = sync.OnceFunc(func() { close(db.release) })
	defer release()
	pop, err := parser.Parse(popFit)
	require.NoError(t, err)
	for range n {
		go func() {
			_, err := e.Auto(bg, pop, exec.Args{Positional: []any{int64(8), int64(32)}})
			done <- err
		}()
	}
	require.Eventually(t, func() bool { return db.waiting.Load() > 0 }, 10*time.Second, time.Millisecond)
	require.Never(t, func() bool { return db.waiting.Load() > int64(exec.MaxLeaders()) }, 100*time.Millisecond, time.Millisecond,
		"groups of pops handed the lead on while their commits waited")
	release()
	for range n {
		require.NoError(t, <-done)
	}
}
