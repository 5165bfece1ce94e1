package driver

// Periodic tasks: every connector (every process's sql.DB) fires the
// schedules that are due, from a ticker started by its first connection;
// exec makes each occurrence exactly-once whoever fires it (see package
// exec, schedule.go).

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/fdbqueue/fdbqueue/exec"
)

// ScheduleTick is how often a connector looks for due schedules, give or
// take a fifth (jitter, so that processes opened together do not fire
// together). An occurrence fires within about a tick of its time, from
// whichever process looks first; the others find it fired.
const ScheduleTick = time.Second

// Schedule is a schedule as Schedules lists it.
type Schedule = exec.Schedule

// ticker runs a connector's firing loop.
type ticker struct {
	once sync.Once
	stop context.CancelFunc
	done chan struct{}
}

// start starts the loop, once.
func (t *ticker) start(e *exec.Executor) {
	t.once.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		t.stop, t.done = cancel, make(chan struct{})
		go func() {
			defer close(t.done)
			for {
				d := ScheduleTick*4/5 + rand.N(ScheduleTick*2/5)
				timer := time.NewTimer(d)
				select {
				case <-ctx.Done():
					timer.Stop()
					return
				case <-timer.C:
				}
				// An error (a schedule whose table is gone, the engine
				// unreachable) leaves the schedule due: the next tick
				// tries again, and SHOW SCHEDULES shows it late.
				_, _ = e.FireDue(ctx)
			}
		}()
	})
}

// close stops the loop and waits for it, if it was started.
func (t *ticker) close() {
	t.once.Do(func() {}) // none starts after
	if t.stop != nil {
		t.stop()
		<-t.done
	}
}

// FireSchedules fires the schedules of db that are due now, as the
// connector's ticker does every ScheduleTick, and returns how many
// occurrences it inserted. Any number of processes may fire at once: each
// occurrence is inserted once.
func FireSchedules(ctx context.Context, db *sql.DB) (int, error) {
	var n int
	err := withExec(ctx, db, func(e *exec.Executor) (err error) {
		n, err = e.FireDue(ctx)
		return err
	})
	return n, err
}

// Schedules lists the schedules of db, by name, with their next runs.
func Schedules(ctx context.Context, db *sql.DB) ([]Schedule, error) {
	var out []Schedule
	err := withExec(ctx, db, func(e *exec.Executor) (err error) {
		out, err = e.Schedules(ctx)
		return err
	})
	return out, err
}

// withExec runs fn with the executor of one of db's connections.
func withExec(ctx context.Context, db *sql.DB, fn func(*exec.Executor) error) error {
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Raw(func(dc any) error {
		fc, ok := dc.(*conn)
		if !ok {
			return fmt.Errorf("fdbqueue: %T is not an fdbqueue connection", dc)
		}
		return fn(fc.exec)
	})
}

// Errors of schedules.
var (
	// ErrNoSchedule is returned by DROP SCHEDULE (without IF EXISTS) for
	// a schedule that does not exist.
	ErrNoSchedule = exec.ErrNoSchedule
	// ErrScheduleExists is returned by CREATE SCHEDULE for a name taken.
	ErrScheduleExists = exec.ErrScheduleExists
	// ErrSchedule is returned for a CREATE SCHEDULE whose start is in the
	// past or not a timestamp.
	ErrSchedule = exec.ErrSchedule
	// ErrScheduled is returned by DROP TABLE for a table that schedules
	// insert into, naming them: DROP SCHEDULE them first.
	ErrScheduled = exec.ErrScheduled
)
