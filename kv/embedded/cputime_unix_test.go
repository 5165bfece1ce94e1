//go:build unix

package embedded_test

import "syscall"

// cpuNow returns the process's CPU time (user and system) in nanoseconds,
// or 0 if it cannot be read.
func cpuNow() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
