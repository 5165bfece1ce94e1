// A log segment's system calls elsewhere than on Linux: the os package's
// sync, which is F_FULLFSYNC on macOS, FlushFileBuffers on Windows,
// fsync(2) on the other Unixes; no write that syncs.

//go:build !linux

package embedded

import "os"

type segmentSys struct{}

func (segmentSys) init(*os.File) error { return nil }

func (segmentSys) close() {}

func (s *segment) sync() error { return s.f.Sync() }

// writeSynced leaves every write to append and sync.
func (s *segment) writeSynced([]byte, int64) (int, bool, error) { return 0, false, nil }
