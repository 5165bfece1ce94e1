//go:build !unix

package embedded_test

// cpuNow returns 0: this platform's process CPU time is not read here.
func cpuNow() int64 { return 0 }
