// A log segment's system calls on Linux: fdatasync(2), and pwritev2(2)
// with RWF_DSYNC, through a descriptor opened with O_DIRECT where the file
// system takes one.

package embedded

import (
	"errors"
	"io"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// segmentSys holds the segment file's descriptor, taken once, so that a
// commit's write and sync do not go through os.File's wrappers and their
// allocations; the segment owns the file and closes it last (close).
// noDsync says pwritev2 with RWF_DSYNC was refused (a kernel before 4.7,
// or a file system without it): writeSynced leaves the write to append.
type segmentSys struct {
	fd      int
	noDsync bool
	// dsyncs counts the writes writeSynced made durable (tests).
	dsyncs int
	// direct is the segment's second descriptor, opened with O_DIRECT for
	// the writes that sync (writeDirect) the first time one is made, or
	// -1: not yet (directTried false), or the file system has no direct
	// I/O. align is what its writes' offsets, lengths and buffers are
	// multiples of. blk is the buffer they are made from: its first
	// tailLen bytes are the file's from tailAt, the start of the block
	// that holds the end of the records, up to that end.
	direct      int
	directTried bool
	align       int64
	blk         []byte
	tailAt      int64
	tailLen     int
}

func (y *segmentSys) init(f *os.File) error {
	y.direct = -1
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) { y.fd = int(fd) })
}

// close closes the direct descriptor, and lets its buffer go; the segment
// closes the file.
func (y *segmentSys) close() {
	if y.direct >= 0 {
		_ = unix.Close(y.direct)
		y.direct = -1
	}
	y.blk, y.tailLen = nil, -1
}

// sync makes the records written so far durable with fdatasync(2), which
// flushes the file's data and the metadata needed to read it back (its
// size, when a chunk was reserved: fdatasync(2), "a change to the file
// size ... would require a metadata flush") but not its timestamps:
// fsync(2) would also write the inode through the journal whenever a
// record's write moved the file's mtime. A commit needs its records
// readable after a crash, not the mtime. The segment's name was made
// durable when it was created (create), with fsync and the directory's.
func (s *segment) sync() error {
	if err := ignoringEINTR(func() error { return syscall.Fdatasync(s.sys.fd) }); err != nil {
		return &os.PathError{Op: "fdatasync", Path: s.f.Name(), Err: err}
	}
	return nil
}

// writeSynced writes b at off with pwritev2(2) and RWF_DSYNC: "a
// per-write equivalent of the O_DSYNC open(2) flag", whose effect "applies
// only to the data range written by the system call"; O_DSYNC writes
// complete "as though each write(2) was followed by a call to
// fdatasync(2)". It returns the bytes written, and done once all of b is
// written and durable. A kernel or file system without the flag leaves
// the write to the caller, from then on; so does EPERM, which a seccomp
// filter (older container runtimes' defaults) answers for a system call
// it does not know, and which the caller's pwrite would meet too if the
// file itself refused the write.
//
// Where the file system takes direct I/O, the write goes around the page
// cache (writeDirect). Both ways the commit waits for the disk twice, for
// the write and for the flush of the disk's cache after it; but a
// buffered write's sync goes through the page cache's writeback, and a
// direct write straight to the block layer. Measured on this project's
// machine (ext4 on a virtual disk), one record of 258 bytes at a time,
// the two ways in turn, 3,000 each: 128 µs at the median buffered (with
// fdatasync, or as here: the same), 108 direct.
func (s *segment) writeSynced(b []byte, off int64) (n int, done bool, err error) {
	if s.sys.noDsync {
		return 0, false, nil
	}
	if s.openDirect() {
		n, used, err := s.writeDirect(b, off)
		if used || err != nil {
			if err == nil {
				s.sys.dsyncs++
			}
			return n, n == len(b) && err == nil, err
		}
	}
	err = ignoringEINTR(func() error {
		var err error
		n, err = unix.Pwritev2(s.sys.fd, [][]byte{b}, off, unix.RWF_DSYNC)
		return err
	})
	switch {
	case err == nil:
		s.sys.dsyncs++
		return n, n == len(b), nil
	case refused(err):
		s.sys.noDsync = true
		return 0, false, nil
	}
	return 0, false, &os.PathError{Op: "pwritev2", Path: s.f.Name(), Err: err}
}

// refused says whether a write's error means that the system does not do
// what was asked (the flag, direct I/O) rather than that the write
// failed: nothing was written.
func refused(err error) bool {
	return errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EPERM)
}

// openDirect opens the segment's direct descriptor, once, and reports
// whether there is one. It needs the file system's alignment for direct
// I/O (statx(2), STATX_DIOALIGN: Linux 6.1 and later), taken at least as
// the file system's block, so that a write never covers part of one
// (ext4 serializes such writes and zeroes around them); and the file it
// opens by name must be the segment's.
func (s *segment) openDirect() bool {
	y := &s.sys
	if y.directTried {
		return y.direct >= 0
	}
	y.directTried = true
	var st unix.Statx_t
	if err := unix.Statx(y.fd, "", unix.AT_EMPTY_PATH, unix.STATX_DIOALIGN|unix.STATX_INO, &st); err != nil ||
		st.Mask&unix.STATX_DIOALIGN == 0 || st.Dio_offset_align == 0 {
		return false
	}
	align := max(int64(st.Dio_offset_align), int64(st.Dio_mem_align), int64(st.Blksize))
	if align&(align-1) != 0 || segChunk%align != 0 {
		return false
	}
	fd, err := unix.Open(s.f.Name(), unix.O_RDWR|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	var other unix.Stat_t
	if unix.Fstat(fd, &other) != nil || other.Ino != st.Ino || uint64(other.Dev) != unix.Mkdev(st.Dev_major, st.Dev_minor) {
		unix.Close(fd)
		return false
	}
	y.direct, y.align = fd, align
	return true
}

// writeDirect writes b at off, and makes it durable, through the direct
// descriptor: the blocks from the one that holds off to the one that
// holds b's end, the bytes before off in the first as the file has them
// (the records before; read back, once a segment or after a write that
// did not come this way), those after b's end zeros (as the file has
// them: reserved space). The blocks past the records are the segment's
// reserved space, written and synced (reserve), so the write changes no
// metadata. It returns b's bytes written and whether the write went this
// way: not when the file system refuses it (then the direct descriptor
// is closed, and writes take the page cache), or when the blocks go past
// the reserved space.
func (s *segment) writeDirect(b []byte, off int64) (n int, used bool, err error) {
	y := &s.sys
	start := off &^ (y.align - 1)
	end := (off + int64(len(b)) + y.align - 1) &^ (y.align - 1)
	if end > s.alloc {
		return 0, false, nil
	}
	head := int(off - start)
	buf := y.buffer(int(end - start))
	if head > 0 && (y.tailAt != start || y.tailLen != head) {
		err := ignoringEINTR(func() error {
			k, err := unix.Pread(y.direct, buf[:y.align], start)
			if err == nil && k < int(y.align) {
				// The file ends inside the block (it is never shorter
				// than the reserved space, unless cut from outside):
				// writing the buffer's stale bytes over the records
				// before would be worse than failing.
				err = io.ErrUnexpectedEOF
			}
			return err
		})
		if err != nil {
			return 0, false, s.directFailed("pread", err)
		}
	}
	copy(buf[head:], b)
	clear(buf[head+len(b):])
	var k int
	err = ignoringEINTR(func() error {
		var err error
		k, err = unix.Pwritev2(y.direct, [][]byte{buf}, start, unix.RWF_DSYNC)
		return err
	})
	if err != nil {
		return 0, false, s.directFailed("pwritev2", err)
	}
	n = max(0, min(len(b), k-head))
	y.tailLen = -1 // unknown after a short write; off moves by n
	if n == len(b) {
		last := (off + int64(n)) &^ (y.align - 1)
		y.tailAt, y.tailLen = last, int(off+int64(n)-last)
		copy(buf, buf[last-start:int(last-start)+y.tailLen])
	}
	if cap(y.blk) > segChunk {
		// Grown for a write larger than a chunk: not kept (a database
		// idle after one large commit would hold it). The next write
		// reads its block back.
		y.blk, y.tailLen = nil, -1
	}
	return n, true, nil
}

// directFailed answers a direct read or write's error: one that says the
// file system refuses direct I/O closes the direct descriptor, and the
// write goes on through the page cache (nil); any other fails the write.
func (s *segment) directFailed(op string, err error) error {
	if refused(err) {
		s.sys.close()
		return nil
	}
	return &os.PathError{Op: op + " (O_DIRECT)", Path: s.f.Name(), Err: err}
}

// buffer returns the direct writes' buffer, n bytes long (n a multiple of
// align), aligned in memory, its first tailLen bytes kept. A buffer grown
// past segChunk for a large write is not kept for the next (writeDirect).
func (y *segmentSys) buffer(n int) []byte {
	if c := cap(y.blk); c >= n {
		return y.blk[:n]
	}
	size := n
	if grown := 2 * cap(y.blk); grown > n && grown <= segChunk {
		size = grown
	}
	a := int(y.align)
	raw := make([]byte, size+a)
	skip := int(-uintptr(unsafe.Pointer(&raw[0])) & uintptr(a-1))
	b := raw[skip : skip+size : skip+size]
	if y.tailLen > 0 {
		copy(b, y.blk[:y.tailLen])
	}
	y.blk = b
	return b[:n]
}

func ignoringEINTR(call func() error) error {
	for {
		if err := call(); !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
