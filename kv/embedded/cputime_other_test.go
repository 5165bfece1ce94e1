//go:build !unix

package embedded_test

import "time"

// processCPU returns -1: the CPU time of the process is read on unix only.
func processCPU() time.Duration { return -1 }
