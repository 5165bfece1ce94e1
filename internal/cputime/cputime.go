// Package cputime reads the CPU time (user and system) a process or a
// thread has used: what benchmarks report beside wall time, since other
// processes' load on a shared machine inflates wall time but not it.
package cputime

import "time"

// Process returns the CPU time the process has used, and whether the
// platform reports it.
func Process() (time.Duration, bool) { return process() }

// Thread returns the CPU time the calling OS thread has used (lock the
// goroutine to it with runtime.LockOSThread), and whether the platform
// reports it (Linux only).
func Thread() (time.Duration, bool) { return thread() }
