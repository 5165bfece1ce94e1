package cputime

import (
	"syscall"
	"time"
)

func thread() (time.Duration, bool) { return usage(syscall.RUSAGE_THREAD) }
