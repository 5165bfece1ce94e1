package fdbmodel

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// preciseNanosleep: the kernel's nanosleep wakes within tens of
// microseconds.
const preciseNanosleep = true

// nanosleep sleeps in the kernel for d, resumed after a signal.
func nanosleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	for errors.Is(unix.Nanosleep(&ts, &ts), unix.EINTR) {
	}
}
