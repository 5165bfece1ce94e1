// Log segment files: created with their space reserved ahead of the
// records, so that a commit's fsync does not also have to make a new file
// size durable.

package embedded

import (
	"bytes"
	"os"
	"path/filepath"
)

// segChunk is how far ahead of its records a segment's space is written
// with zeros. Appending past a file's end makes every fsync write the
// inode's new size (and on ext4, the extents) through the journal:
// measured on this project's machine (ext4 on a virtual disk), an append
// of 400 bytes and its fsync took 180 µs at the median, the same write
// into reserved space 115 µs. Space reserved with fallocate(2) is not
// enough: ext4 marks it unwritten, and the fsync after the first write into
// each of its pages commits that page's conversion through the journal
// too. An append of 21 KB (a 100-row INSERT) and its fsync took 201 µs
// into fallocated space, 112 µs into space written with zeros; appends of
// 178 bytes (a single-row pop: a new page every 23rd) 91 µs either way at
// the median, the page-crossing ones paying the difference. Writing a
// chunk of zeros costs the commit that needs it about 1 ms (with its
// fsync), once a MiB of log.
const segChunk = 1 << 20

// segment is the log segment being written. The writer goroutine owns it.
type segment struct {
	f *os.File
	// off is where the next record goes; alloc, the size of the reserved
	// space (the file's size). Bytes from off to alloc are zero.
	off, alloc int64
	sys        segmentSys // what the system's own calls need (segment_*.go)
}

// createSegment starts a new log segment whose first record is version
// first, and makes its name durable. A segment of that name may exist from
// an earlier open that committed nothing; it holds no record recovery could
// apply (or recovery would be past first), so it is truncated and reused.
func createSegment(dir string, first uint64) (*segment, error) {
	f, err := os.OpenFile(filepath.Join(dir, segName(first)), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	s := &segment{f: f}
	if err := s.sys.init(f); err != nil {
		f.Close()
		return nil, err
	}
	if err := s.create(dir); err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

func (s *segment) create(dir string) error {
	if _, err := s.f.Write([]byte(segMagic)); err != nil {
		return err
	}
	s.off = int64(len(segMagic))
	s.alloc = s.off
	if err := s.reserve(segChunk); err != nil {
		return err
	}
	if err := s.f.Sync(); err != nil {
		return err
	}
	return syncDir(dir)
}

// reserve makes the file at least size bytes long, a multiple of segChunk,
// writing zeros into the new bytes: a full disk fails here, before any
// commit depends on the space, and the records written there later change
// no metadata. The reserved space starts and ends on a chunk's boundary,
// so that no write of zeros covers part of a block that direct writes
// (writeSynced) hold: the page cache would read it from the disk first.
func (s *segment) reserve(size int64) error {
	size = (size + segChunk - 1) &^ (segChunk - 1)
	for s.alloc < size {
		n, err := s.f.WriteAt(zeros[:min(int64(len(zeros)), size-s.alloc)], s.alloc)
		s.alloc += int64(n)
		if err != nil {
			return err
		}
	}
	return nil
}

// zeros is what reserve writes, a piece at a time; never written to. A
// sixteenth of a chunk: every program that imports the engine holds it.
var zeros = make([]byte, segChunk/16)

// append writes b at the end of the records, reserving another chunk first
// when b does not fit.
func (s *segment) append(b []byte) error {
	if end := s.off + int64(len(b)); end > s.alloc {
		if err := s.reserve(end + segChunk); err != nil {
			return err
		}
	}
	n, err := s.f.WriteAt(b, s.off)
	s.off += int64(n)
	return err
}

// appendSync writes b at the end of the records and makes it durable, as
// append then sync do. Where the system writes and syncs in one call
// (writeSynced), it makes that call: a commit then enters the kernel once,
// not twice. Such a call makes durable only the bytes it writes, and those
// are all the file's bytes not durable yet: under SyncFull every write of
// the log is synced before the next (commitGroup), the segment's first
// chunk was synced when it was created, and a chunk reserved here is
// synced (its zeros, and the file's new size) before the write.
func (s *segment) appendSync(b []byte) error {
	if end := s.off + int64(len(b)); end > s.alloc {
		if err := s.reserve(end + segChunk); err != nil {
			return err
		}
		if err := s.sync(); err != nil {
			return err
		}
	}
	n, done, err := s.writeSynced(b, s.off)
	s.off += int64(n)
	if done || err != nil {
		return err
	}
	// Not written by that call, or only in part: the rest the usual way.
	if err := s.append(b[n:]); err != nil {
		return err
	}
	return s.sync()
}

// close cuts the reserved space after the records and closes the file.
// The cut only gives the space back: recovery reads a zero tail as the
// clean end of the log (see replaySegment), which is also how it finds a
// segment left by a crash.
func (s *segment) close() error {
	s.sys.close()
	_ = s.f.Truncate(s.off)
	return s.f.Close()
}

// truncateSynced cuts the file at name to size and makes the cut durable.
func truncateSynced(name string, size int64) error {
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// zeroTail reports whether b, what follows a segment's last good record, is
// reserved space never written: all zero bytes.
func zeroTail(b []byte) bool {
	return len(bytes.TrimLeft(b, "\x00")) == 0
}
