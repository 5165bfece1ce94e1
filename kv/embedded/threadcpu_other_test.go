//go:build !linux

package embedded

// threadCPU returns 0: this platform does not report a thread's CPU time.
func threadCPU() int64 { return 0 }
