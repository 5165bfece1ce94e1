// The holder check: a file database open to write checks, once a second,
// that its lock file is still in place, and refuses to write once it is
// not.

package embedded

import (
	"errors"
	"fmt"
	"time"
)

// lockCheckEvery is how often a writer checks its lock. The check is two
// stat calls, off the commit path; a stat per commit would cost commits
// (a lone client's runs in tens of microseconds) for an event that a
// cleaner of temporary files brings about once in a long while.
//
// What the check is for: the lock file DIR/LOCK can be removed while this
// process holds its lock (a cleaner of temporary files, a careless rm).
// Another process of this build still finds the directory itself locked
// (lock.go), but one that locks only LOCK (an earlier build), or one
// where directories cannot be locked (NFS), creates a new LOCK, locks it,
// and opens the database to write: two writers on one log. Nothing this
// process does can keep that process out once LOCK is gone; what it can
// do is stop writing, so that the log has one writer again within a
// second (commits already on their way to the log may still be written).
// Putting LOCK back is no cure: another process may have opened it, or
// be opening it, in the meantime. So the database fails, as after an I/O
// error: reads go on, commits fail with ErrFailed (and the reason), and
// opening the database again, once this process closed it, takes the
// lock anew (a process of this build holds the directory's lock meanwhile,
// so no other process of this build has opened it).
//
// On Windows the check always passes: a file open there cannot be removed.
const lockCheckEvery = time.Second

// lockLostError is what commits fail with once the holder check found the
// lock file gone or replaced: it is an ErrFailed, which no retry loop
// retries.
type lockLostError struct{ why error }

func (e *lockLostError) Error() string {
	return fmt.Sprintf("fdbqueue: database failed: %v while this process held the database's lock (a cleaner of temporary files, or rm?); "+
		"another process may be writing the database now, so this one writes no more: close the database and open it again", e.why)
}

func (e *lockLostError) Unwrap() error { return ErrFailed }

// watch starts the holder check, which calls lost (once) when the lock is
// gone or replaced. Close stops it.
func (l *dirLock) watch(lost func(error)) {
	l.stop = make(chan struct{})
	l.done = make(chan struct{})
	l.now = make(chan chan struct{})
	go func() {
		defer close(l.done)
		tick := time.NewTicker(lockCheckEvery)
		defer tick.Stop()
		for {
			var answer chan struct{}
			select {
			case <-l.stop:
				return
			case <-tick.C:
			case answer = <-l.now:
			}
			// A check that cannot tell (a stat failing otherwise than
			// with ENOENT: the directory's permissions changed, say)
			// fails nothing: the next one may tell.
			err := l.current()
			if !errors.Is(err, errLockMoved) {
				err = nil
			}
			if err != nil {
				lost(&lockLostError{why: err})
			}
			if answer != nil {
				close(answer)
			}
			if err != nil {
				return
			}
		}
	}()
}

// checkNow runs the holder check at once and waits for it, if it runs
// (tests).
func (l *dirLock) checkNow() {
	if l.now == nil {
		return
	}
	answer := make(chan struct{})
	select {
	case l.now <- answer:
		<-answer
	case <-l.done:
	}
}

// Close stops the holder check and lets go of the locks.
func (l *dirLock) Close() error {
	if l.stop != nil {
		l.stopOnce.Do(func() { close(l.stop) })
		<-l.done
	}
	return l.close()
}

// lose fails the log as fail does for an I/O error, with err (an
// ErrFailed) as it is: commits queued are answered with it, and later
// ones too. A group being written when it is called fails at its next
// step, or is written (and answered) before it.
func (w *wal) lose(err error) { w.failWith(err, nil) }
