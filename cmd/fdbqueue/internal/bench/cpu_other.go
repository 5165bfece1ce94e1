//go:build !unix

package bench

import "time"

// processCPU reports that this platform's CPU time is not measured: the
// wait bench then prints it as -1.
func processCPU() (time.Duration, bool) { return 0, false }
