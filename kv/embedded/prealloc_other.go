//go:build !linux

package embedded

import "os"

// preallocate extends f from size from to size to with zero bytes (a
// sparse extension: the space is allocated as records are written).
func preallocate(f *os.File, from, to int64) error {
	return f.Truncate(to)
}
