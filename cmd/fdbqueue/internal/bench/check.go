package bench

// fdbqueue bench's self-checks, and the faults that show each can fail.

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// errSelfCheck is returned (wrapped, with the run and what did not add up)
// when a run's result is wrong: the bench reports it as a failed check,
// beside the runs that passed theirs.
var errSelfCheck = errors.New("self-check failed")

// benchFaults break a run on purpose, so that the tests can show that each
// self-check fails when its invariant does not hold. All nil in a real run.
type benchFaults struct {
	// afterRun runs after a push or pop run's clients stop, before its
	// checks count the table.
	afterRun func(ctx context.Context, db *sql.DB, table string) error
	// afterFill runs after a latency fill (workload random or worst),
	// before the timed pops.
	afterFill func(ctx context.Context, db *sql.DB, table, workload string) error
	// popped may alter a popped (or leased) task before it is checked.
	popped func(t *poppedTask)
	// acked may alter what an ack of the lease runs returned: the task's
	// id and the rows it removed.
	acked func(id, n int64) (int64, int64)
}

// poppedTask is what a pop returns.
type poppedTask struct {
	id       int64
	cpu, mem int64
	payload  []byte
}

func (b *bencher) afterRun() error {
	if b.faults.afterRun == nil {
		return nil
	}
	return b.faults.afterRun(b.ctx, b.db, b.o.table)
}

// checkTaken runs the checks of a run that popped tasks from a table of
// filled rows: none popped twice (ids, by client or process), and popped +
// left = filled.
func (b *bencher) checkTaken(ids [][]int64, filled, taken int64) error {
	if err := checkOnce(ids, "popped"); err != nil {
		return err
	}
	return b.checkLeft(filled, taken, "popped")
}

// checkLeft runs the end of a run's checks on a table of filled rows, of
// which taken went (what: popped or acked): the faults' afterRun, then
// taken + left = filled.
func (b *bencher) checkLeft(filled, taken int64, what string) error {
	if err := b.afterRun(); err != nil {
		return err
	}
	left, err := b.count()
	if err != nil {
		return err
	}
	return checkGone(filled, taken, left, what)
}

// checkPushed: every row a client pushed is in the table, and no other.
func checkPushed(pushed, counted int64) error {
	if pushed != counted {
		return fmt.Errorf("%w: %d rows pushed, %d in the table", errSelfCheck, pushed, counted)
	}
	return nil
}

// checkGone: the rows taken (what: popped or acked) are the rows that
// left the table.
func checkGone(filled, taken, left int64, what string) error {
	if filled-taken != left {
		return fmt.Errorf("%w: %d rows filled, %d %s, so %d should be left; %d are", errSelfCheck, filled, taken, what, filled-taken, left)
	}
	return nil
}

// checkTask: a popped task fits the consumer's cpu and mem, and carries the
// payload it was pushed with.
func (b *bencher) checkTask(t *poppedTask, cpu, mem int) error {
	if b.faults.popped != nil {
		b.faults.popped(t)
	}
	if t.cpu < 1 || t.cpu > int64(cpu) || t.mem < 1 || t.mem > int64(mem) {
		return fmt.Errorf("%w: task %d (cpu %d, mem %d) popped by a consumer with cpu %d, mem %d: it does not fit", errSelfCheck, t.id, t.cpu, t.mem, cpu, mem)
	}
	if len(t.payload) != payloadLen {
		return fmt.Errorf("%w: task %d has a payload of %d bytes, not %d", errSelfCheck, t.id, len(t.payload), payloadLen)
	}
	if !bytes.Equal(t.payload, b.payload) {
		return fmt.Errorf("%w: task %d's payload is not the one pushed", errSelfCheck, t.id)
	}
	b.tasksChecked.Add(1)
	return nil
}

// checkOnce: no task was popped (or leased: what) twice, by one consumer
// or two.
func checkOnce(ids [][]int64, what string) error {
	seen := map[int64]bool{}
	for _, l := range ids {
		for _, id := range l {
			if seen[id] {
				return fmt.Errorf("%w: task %d was %s twice", errSelfCheck, id, what)
			}
			seen[id] = true
		}
	}
	return nil
}
