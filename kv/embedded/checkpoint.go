package embedded

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/fdbqueue/fdbqueue/kv"
)

// Checkpoint files: magic, uvarint version, then entries (uvarint key
// length, key, uvarint value length, value), then an 8-byte entry count and
// the CRC-32C of everything before it. A checkpoint at version V holds the
// database as of V; the log records after V complete it.
const (
	ckptMagic = "FDBQCKP1"
	// DefaultCheckpointBytes is how much log a file database writes before
	// it checkpoints, when FileConfig.CheckpointBytes is 0.
	DefaultCheckpointBytes = 64 << 20
)

func ckptName(ver uint64) string { return fmt.Sprintf("ckpt-%020d.db", ver) }

// versionOf parses the version in a segment or checkpoint file name.
func versionOf(path, prefix, suffix string) (uint64, bool) {
	base := filepath.Base(path)
	if !strings.HasPrefix(base, prefix) || !strings.HasSuffix(base, suffix) {
		return 0, false
	}
	v, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(base, prefix), suffix), 10, 64)
	return v, err == nil
}

// maybeCheckpoint starts a checkpoint when enough log was written since the
// last one, or a Checkpoint call is waiting: it moves the log to a new
// segment, so the old ones can go once the checkpoint is durable, pins the
// current version, and writes the checkpoint on another goroutine. Called by
// the writer goroutine. A call that arrives while a checkpoint runs waits for
// the next one, which this starts as soon as the running one finishes.
func (w *wal) maybeCheckpoint(forced bool) {
	if w.ckptBusy || (!forced && w.sinceCkpt < w.ckptBytes) {
		return
	}
	if err := w.failure(); err != nil {
		w.answerCheckpoints(w.takeCheckpointWaiters(), err)
		return
	}
	if w.sinceCkpt > 0 {
		seg, err := createSegment(w.dir, w.lastVer+1)
		if err != nil {
			w.fail(err, nil)
			w.answerCheckpoints(w.takeCheckpointWaiters(), err)
			return
		}
		w.seg.close()
		w.seg = seg
	}
	w.sinceCkpt = 0
	w.ckptBusy = true
	// Take the waiters before pinning the version: every commit that
	// returned before a waiter asked is then in the checkpoint.
	w.ckptTaken = w.takeCheckpointWaiters()
	pin, ver := w.s.pinReadVersion()
	w.ckpt.Add(1)
	go func() {
		defer w.ckpt.Done()
		defer w.s.releaseReadVersion(pin)
		if w.ckptStarted != nil {
			w.ckptStarted(ver)
		}
		w.ckptDone <- w.writeCheckpoint(ver)
	}()
}

func (w *wal) takeCheckpointWaiters() []chan error {
	w.mu.Lock()
	defer w.mu.Unlock()
	taken := w.ckptWaiters
	w.ckptWaiters = nil
	return taken
}

func (w *wal) answerCheckpoints(waiters []chan error, err error) {
	for _, c := range waiters {
		c <- err
	}
}

// finishCheckpoint answers the Checkpoint calls the finished checkpoint took.
// A failed checkpoint leaves the log as it was (it still holds everything);
// the next one retries.
func (w *wal) finishCheckpoint(err error) {
	w.ckptBusy = false
	w.answerCheckpoints(w.ckptTaken, err)
	w.ckptTaken = nil
}

// checkpoint asks the writer for a checkpoint and waits for it.
func (w *wal) checkpoint() error {
	c := make(chan error, 1)
	w.mu.Lock()
	if w.stopping {
		w.mu.Unlock()
		return errLogClosed
	}
	w.ckptWaiters = append(w.ckptWaiters, c)
	w.mu.Unlock()
	w.poke()
	return <-c
}

// writeCheckpoint writes the database as of ver, a version pinned by
// pinReadVersion, to a new checkpoint file, then deletes the log segments and
// checkpoints it makes redundant. It runs on its own goroutine, concurrently
// with commits.
func (w *wal) writeCheckpoint(ver uint64) error {
	s := w.s
	tmp := filepath.Join(w.dir, ckptName(ver)+".tmp")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // after a successful rename this finds nothing
	crc := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(f, crc), 1<<20)
	var n uint64
	var scratch []byte
	put := func(b []byte) {
		scratch = binary.AppendUvarint(scratch[:0], uint64(len(b)))
		bw.Write(scratch)
		bw.Write(b)
	}
	bw.WriteString(ckptMagic)
	bw.Write(binary.AppendUvarint(nil, ver))
	begin, beginEx := []byte{}, false
	var kvs []kv.KeyValue
	for {
		var done bool
		kvs, done = s.fetch(ver, begin, beginEx, []byte{0xff}, false, 4096, kvs[:0], new([]byte))
		for _, e := range kvs {
			put(e.Key)
			put(e.Value)
			n++
		}
		if done || len(kvs) == 0 {
			break
		}
		begin, beginEx = kvs[len(kvs)-1].Key, true
	}
	bw.Write(binary.LittleEndian.AppendUint64(nil, n))
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32())); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(w.dir, ckptName(ver))); err != nil {
		return err
	}
	if err := syncDir(w.dir); err != nil {
		return err
	}
	return removeRedundant(w.dir, ver)
}

// removeRedundant deletes the checkpoints older than the one at ver, and the
// log segments whose every record is at or below ver.
func removeRedundant(dir string, ver uint64) error {
	ckpts, _ := filepath.Glob(filepath.Join(dir, "ckpt-*.db"))
	for _, c := range ckpts {
		if v, ok := versionOf(c, "ckpt-", ".db"); ok && v < ver {
			if err := os.Remove(c); err != nil {
				return err
			}
		}
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "wal-*.log"))
	sort.Strings(segs)
	for i := 0; i+1 < len(segs); i++ {
		// Segment i ends just before segment i+1 starts.
		next, ok := versionOf(segs[i+1], "wal-", ".log")
		if !ok || next > ver+1 {
			break
		}
		if err := os.Remove(segs[i]); err != nil {
			return err
		}
	}
	return syncDir(dir)
}

// loadCheckpoint loads the newest checkpoint into the empty store and
// returns its version (0 without one).
func (s *store) loadCheckpoint(dir string) (uint64, error) {
	ckpts, err := filepath.Glob(filepath.Join(dir, "ckpt-*.db"))
	if err != nil || len(ckpts) == 0 {
		return 0, err
	}
	sort.Strings(ckpts)
	path := ckpts[len(ckpts)-1]
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	bad := func(why string) (uint64, error) {
		return 0, fmt.Errorf("fdbqueue: checkpoint %s is corrupt (%s)", path, why)
	}
	if len(data) < len(ckptMagic)+12 || string(data[:len(ckptMagic)]) != ckptMagic {
		return bad("header")
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return bad("checksum")
	}
	count := binary.LittleEndian.Uint64(body[len(body)-8:])
	r := &decoder{b: body[len(ckptMagic) : len(body)-8]}
	ver := r.uvarint()
	for i := uint64(0); i < count && r.err == nil; i++ {
		k, v := r.view(), r.view()
		if r.err == nil {
			s.tree.Load(s.slabs.put(ver, k, v, false))
		}
	}
	if r.err != nil || len(r.b) != 0 {
		return bad("entries")
	}
	s.nextVer = ver
	s.version.Store(ver)
	return ver, nil
}
