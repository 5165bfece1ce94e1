package embedded

import "syscall"

// threadCPU returns the calling thread's CPU time (user and system) in
// nanoseconds, or 0 where the platform does not report it.
func threadCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
