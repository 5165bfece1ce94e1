// A log segment's sync elsewhere than on Linux: the os package's, which
// is F_FULLFSYNC on macOS, FlushFileBuffers on Windows, fsync(2) on the
// other Unixes.

//go:build !linux

package embedded

func (s *segment) sync() error { return s.f.Sync() }
