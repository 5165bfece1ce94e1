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
	// DefaultCheckpointBytes is FileConfig.CheckpointBytes when that is 0:
	// the least checkpoint and log on disk that make a checkpoint due.
	DefaultCheckpointBytes = 8 << 20
	// ckptLiveFactor: a checkpoint is due once the checkpoint and log on
	// disk reach this many times the live data (and CheckpointBytes).
	ckptLiveFactor = 3
	// ckptCloseDivisor: at Close, CheckpointBytes divided by this stands
	// for CheckpointBytes.
	ckptCloseDivisor = 8
)

// ckptPolicy says when a checkpoint is due, from what is on disk (the last
// checkpoint, and the log since it, whichever open wrote it: a program
// that opens the database, writes a little and exits adds to what its
// earlier runs left) and the live data, about what a new checkpoint would
// leave there.
//
// A checkpoint is due once the log has grown since the last one and the
// disk use reaches the larger of floor and 3 times the live data. The
// directory then holds at most about that (plus, while a checkpoint runs,
// the new checkpoint and the log commits write meanwhile), and an open
// replays at most that much log. A checkpoint writes the live data once
// the log since the last one reached about twice the live data: at most
// half a byte for each byte of log. A queue that only grows is not
// checkpointed: its log is its data, no larger than a checkpoint of it.
// The last checkpoint counts, not only the log: after a queue drains, a
// checkpoint taken while it was full is reclaimed too.
//
// At a clean Close, the floor is an eighth of floor: the close leaves at
// most the larger of that and 3 times the live data, and writes less than
// the next open would otherwise read. The eighth keeps a program that
// writes a few rows an open from checkpointing at each close.
type ckptPolicy struct {
	floor int64 // FileConfig.CheckpointBytes
}

func newCkptPolicy(floor int64) ckptPolicy {
	if floor <= 0 {
		floor = DefaultCheckpointBytes
	}
	return ckptPolicy{floor: floor}
}

// due reports whether a checkpoint is due while the database is open, with
// ckpt bytes of checkpoint and log bytes of log after it on disk, and live
// bytes of live data.
func (p ckptPolicy) due(ckpt, log, live int64) bool {
	return log > 0 && ckpt+log >= max(p.floor, ckptLiveFactor*live)
}

// dueAtClose reports whether a checkpoint is due as the database closes.
func (p ckptPolicy) dueAtClose(ckpt, log, live int64) bool {
	return log > 0 && ckpt+log >= max(p.floor/ckptCloseDivisor, ckptLiveFactor*live)
}

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

// maybeCheckpoint starts a checkpoint when the policy says one is due, or a
// Checkpoint call is waiting. Called by the writer goroutine, also as it
// starts: a log that earlier opens left over the threshold is checkpointed
// as soon as the database opens, while it serves its first commits. A call
// that arrives while a checkpoint runs waits for the next one, which this
// starts as soon as the running one finishes.
func (w *wal) maybeCheckpoint(forced bool) {
	if w.ckptBusy || !forced && !w.policy.due(w.ckptSize, w.sinceCkpt, w.live) {
		return
	}
	w.startCheckpoint()
}

// startCheckpoint moves the log to a new segment, so that the old ones can
// go once the checkpoint is durable, pins the current version, and writes
// the checkpoint on another goroutine. Called by the writer goroutine, no
// checkpoint running.
func (w *wal) startCheckpoint() {
	if err := w.failure(); err != nil {
		w.answerCheckpoints(w.takeCheckpointWaiters(), err)
		return
	}
	// A segment without records (just opened, or started by the last
	// checkpoint) follows every record the checkpoint holds already.
	if w.seg.off > int64(len(segMagic)) {
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
		size, err := w.writeCheckpoint(ver)
		w.ckptDone <- ckptResult{size: size, err: err}
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

// ckptResult is a finished checkpoint's outcome: its file's size, or why
// it failed.
type ckptResult struct {
	size int64
	err  error
}

// finishCheckpoint answers the Checkpoint calls the finished checkpoint took.
// A failed checkpoint leaves the log as it was (it still holds everything);
// the next one retries.
func (w *wal) finishCheckpoint(r ckptResult) {
	w.ckptBusy = false
	if r.err == nil {
		w.ckptSize = r.size
	}
	w.answerCheckpoints(w.ckptTaken, r.err)
	w.ckptTaken = nil
}

// finishRunningCheckpoint waits for the running checkpoint, if any, and
// answers the calls it took. Called by the writer goroutine.
func (w *wal) finishRunningCheckpoint() {
	w.ckpt.Wait()
	select {
	case r := <-w.ckptDone:
		w.finishCheckpoint(r)
	default:
	}
}

// checkpointAtClose writes a checkpoint as the database closes, if the
// policy says one is due, and waits for it. Its error is dropped: the log
// still holds everything, and the next open checkpoints if it needs to.
func (w *wal) checkpointAtClose() {
	w.finishRunningCheckpoint()
	s := w.s
	s.mu.Lock()
	s.collectQueuedLocked(s.cfg.Clock())
	w.live = int64(s.slabs.live)
	s.mu.Unlock()
	if w.policy.dueAtClose(w.ckptSize, w.sinceCkpt, w.live) {
		w.startCheckpoint()
		w.finishRunningCheckpoint()
	}
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
// checkpoints it makes redundant, and returns the new file's size. It runs on
// its own goroutine, concurrently with commits.
func (w *wal) writeCheckpoint(ver uint64) (int64, error) {
	s := w.s
	tmp := filepath.Join(w.dir, ckptName(ver)+".tmp")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, err
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
		return 0, err
	}
	if _, err := f.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32())); err != nil {
		f.Close()
		return 0, err
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp, filepath.Join(w.dir, ckptName(ver))); err != nil {
		return 0, err
	}
	if err := syncDir(w.dir); err != nil {
		return 0, err
	}
	return size, removeRedundant(w.dir, ver)
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
// returns its version and size (0 without one).
func (s *store) loadCheckpoint(dir string) (uint64, int64, error) {
	ckpts, err := filepath.Glob(filepath.Join(dir, "ckpt-*.db"))
	if err != nil || len(ckpts) == 0 {
		return 0, 0, err
	}
	sort.Strings(ckpts)
	path := ckpts[len(ckpts)-1]
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	bad := func(why string) (uint64, int64, error) {
		return 0, 0, fmt.Errorf("fdbqueue: checkpoint %s is corrupt (%s)", path, why)
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
	return ver, int64(len(data)), nil
}
