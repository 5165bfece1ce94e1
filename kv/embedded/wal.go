package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
)

// SyncMode says when the log is flushed to stable storage.
type SyncMode int

const (
	// SyncFull makes every commit durable before it returns: one fsync per
	// group of concurrent commits. The default.
	SyncFull SyncMode = iota
	// SyncNone writes the log without fsync. A process crash loses
	// nothing (the data is in the operating system's cache), but a power
	// loss or an operating system crash may lose the last commits (never
	// part of one: recovery cuts the log at the first incomplete record).
	SyncNone
)

// Log segment files: a header, then records of [u32 length][u32 CRC-32C of
// the payload][payload], little-endian.
const (
	segMagic      = "FDBQWAL1"
	recHeaderSize = 8
	maxRecordSize = 64 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrFailed is returned (wrapped with the cause) by commits after the log hit
// an I/O error: the database keeps serving reads; reopen it to write again.
var ErrFailed = errors.New("fdbqueue: database failed after an I/O error; reopen it")

// errLogClosed answers a Checkpoint call made as the database closes.
var errLogClosed = kv.Errorf(kv.ErrClientInvalidOperation.Code, "database is closed")

// pending is a commit waiting for the log.
type pending struct {
	ver  uint64
	b    *batch
	done chan error
	// touched is what staging b wrote (stageLocked), for publishLocked;
	// staged says b is staged.
	touched []rec
	staged  bool
}

// wal is a file database's write-ahead log. One goroutine at a time holds
// its pen and writes it: a committing goroutine when the log is idle (lead),
// else the writer goroutine (run), so that a lone client's commit costs its
// write and fsync without two hand-offs between goroutines, and concurrent
// commits still share an fsync.
type wal struct {
	s    *store
	dir  string
	sync SyncMode

	// mu guards queue, failed, stopping, ckptWaiters (the Checkpoint calls
	// no running checkpoint has taken yet), writing, writerWaits and
	// changes to lastGroup.
	mu          sync.Mutex
	queue       []*pending
	failed      error
	stopping    bool
	ckptWaiters []chan error
	// writing says a goroutine holds the pen: it writes the queued
	// commits in version order, and owns the fields below.
	writing bool
	// lastGroup is the size of the last group written: while groups hold
	// more than one commit, commits go to the writer goroutine, which
	// gathers them (gather), and are staged as they settle (enqueue).
	lastGroup atomic.Int64
	// writerWaits says the writer goroutine, holding a finished
	// checkpoint's outcome, found the pen taken: whoever puts it down
	// wakes the writer.
	writerWaits bool
	wake        chan struct{}
	done        chan struct{}

	// unstaged is how many queued commits are not staged yet; s.mu
	// guards it.
	unstaged int

	// The pen's holder owns these. ckptSize is the bytes of the last
	// checkpoint; sinceCkpt, of the log on disk after it, what earlier
	// opens left included; live, of the live data's records as of the
	// last group: what policy decides by. ckptTaken holds the Checkpoint
	// calls the running checkpoint answers: those that asked before it
	// took its read version, and no others.
	seg       *segment
	buf       []byte
	ckptSize  int64
	sinceCkpt int64
	live      int64
	lastVer   uint64
	policy    ckptPolicy
	ckpt      sync.WaitGroup // the running checkpoint, if any
	ckptBusy  bool
	ckptTaken []chan error
	ckptDone  chan ckptResult

	// ckptStarted, if set (tests), runs on the checkpoint's goroutine
	// once its read version is pinned, before it writes anything.
	ckptStarted func(ver uint64)
	// syncFault, if set (tests, before the commits it fails are queued),
	// turns the result of each fsync of the log into its error.
	syncFault func() error
}

func segName(first uint64) string { return fmt.Sprintf("wal-%020d.log", first) }

func (w *wal) start() {
	w.wake = make(chan struct{}, 1)
	w.done = make(chan struct{})
	w.ckptDone = make(chan ckptResult, 1)
	go w.run()
}

// enqueue adds a commit; callers hold s.mu, so commits queue in version
// order, and call lead once they let go of it. The channel receives nil once
// the commit is durable and readable.
//
// Under concurrent commits (the last group had several), a commit is
// staged here, at a version no reader reads yet, by the goroutine that
// settles it, while the writer goroutine fsyncs the group before: the
// writer, whose loop bounds their rate, is left to write, fsync and
// publish (8 clients' single-row INSERTs: it ran 106 to 166 µs a group,
// now 53 to 64, traced; 8 clients' 100-row INSERTs no longer wait for it
// to install each group's rows). A lone client's commit is staged by the
// pen's holder (commitGroup), and so is every commit after one left to it
// until it is staged, versions being staged in order.
//
// Each call makes an entry of its own, even for a batch queued before: a
// transaction's buffers are zeroed when they go back to the pool
// (release), so an entry kept with them would serve only a commit after
// an unanswered one (Commit called from two goroutines at once), where
// one entry for both wrote one version twice and the other never.
func (w *wal) enqueue(ver uint64, b *batch) <-chan error {
	p := &pending{ver: ver, b: b, done: make(chan error, 1)}
	if w.unstaged == 0 && w.lastGroup.Load() > 1 {
		p.touched, p.staged = w.s.stageLocked(ver, b), true
	} else {
		w.unstaged++
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.failed != nil:
		p.done <- w.failed
	case w.stopping:
		// The database closed under a transaction opened before.
		p.done <- errLogClosed
	default:
		w.queue = append(w.queue, p)
	}
	return p.done
}

func (w *wal) failure() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed
}

// lead is called by a committing goroutine once its commit is queued for
// the log (perhaps with others a commitGroups leader queued with it). A lone
// client (the last group was one commit, and no one holds the pen) writes
// the queue itself. Under concurrent commits it wakes the writer
// goroutine, which gathers groups; and when another goroutine holds the
// pen, that one answers the queue, or wakes the writer for it when it puts
// the pen down. A leader writes one group: commits queued meanwhile go to
// the writer, so a client is not kept writing for others.
func (w *wal) lead() {
	w.mu.Lock()
	switch {
	case w.writing || len(w.queue) == 0:
		w.mu.Unlock()
		return
	case w.stopping || w.lastGroup.Load() > 1:
		w.mu.Unlock()
		w.poke()
		return
	}
	w.writing = true
	group := w.queue
	w.queue = nil
	w.mu.Unlock()
	n := 0
	if w.commitGroup(group) {
		n = len(group)
	}
	due := !w.ckptBusy && w.policy.due(w.ckptSize, w.sinceCkpt, w.live)
	if w.putDown(n) || due {
		w.poke()
	}
}

// putDown lets go of the pen, after writing a group of n commits (0: none,
// or the log failed), and reports whether the writer goroutine has work:
// queued commits, Checkpoint calls, a close, or a wait for the pen.
func (w *wal) putDown(n int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writing = false
	if n > 0 {
		w.lastGroup.Store(int64(n))
	}
	work := len(w.queue) > 0 || len(w.ckptWaiters) > 0 || w.stopping || w.writerWaits
	w.writerWaits = false
	return work
}

// poke wakes the writer goroutine.
func (w *wal) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run is the writer goroutine: it writes queued commits as groups, one
// write and one fsync per group, when no committing goroutine does (lead),
// and it starts and finishes checkpoints.
func (w *wal) run() {
	defer close(w.done)
	var ckptRes ckptResult // a finished checkpoint's outcome, while ckptFinished
	ckptFinished := false
	idle := func() {
		select {
		case <-w.wake:
		case ckptRes = <-w.ckptDone:
			ckptFinished = true
		}
	}
	for {
		w.gather()
		w.mu.Lock()
		if w.writing {
			// The holder wakes the writer if it leaves work; a finished
			// checkpoint is work for the writer alone.
			w.writerWaits = ckptFinished
			w.mu.Unlock()
			if !ckptFinished {
				idle()
			} else {
				<-w.wake
			}
			continue
		}
		w.writing = true
		group := w.queue
		w.queue = nil
		stopping := w.stopping
		forced := len(w.ckptWaiters) > 0
		w.mu.Unlock()
		if !ckptFinished {
			select {
			case ckptRes = <-w.ckptDone:
				ckptFinished = true
			default:
			}
		}
		if ckptFinished {
			w.finishCheckpoint(ckptRes)
			ckptRes, ckptFinished = ckptResult{}, false
		}
		w.maybeCheckpoint(forced)
		if len(group) == 0 {
			if stopping {
				// The pen stays taken: nothing is written after this.
				w.checkpointAtClose()
				w.answerCheckpoints(w.takeCheckpointWaiters(), errLogClosed)
				return
			}
			if !w.putDown(0) {
				idle()
			}
			continue
		}
		n := 0
		if w.commitGroup(group) {
			n = len(group)
		}
		w.putDown(n)
	}
}

// commitGroup writes a group of commits to the log, makes it durable, then
// readable, and answers its commits. The caller holds the pen. It reports
// whether the group committed; if not, the log failed.
//
// Each commit is staged in the tree, at its version, before it is readable:
// under concurrent commits as it settles (enqueue), unless one before it is
// not staged yet; the others here.
func (w *wal) commitGroup(group []*pending) bool {
	s := w.s
	// Installing a few keys takes less than handing the fsync to
	// another goroutine and back: those are synced as they are written,
	// in one call where the system has one (segment.appendSync).
	overlap := w.sync == SyncFull && unstagedWrites(group) >= stageMin
	err := w.encode(group)
	if err == nil && !overlap {
		err = w.put(group, w.sync == SyncFull)
	}
	if err != nil {
		w.fail(err, group)
		return false
	}
	if overlap {
		// The tree takes the group while another goroutine writes its
		// records and syncs them, at versions no reader reads yet
		// (they read at s.version), and it becomes readable once they
		// are durable. Installing a 100-row INSERT takes about as long
		// as its write and fsync. The write goes with the fsync, in the
		// one call that does both (appendSync), not before it here: a
		// write through the page cache into a block that the direct
		// writes of lone commits hold (segment.writeSynced) would have
		// the kernel read that block from the disk first.
		//
		// The lock is taken a commit at a time: the clients that are
		// not in this group read between two (a 100-row INSERT reads
		// its queue's tails and ids), where under one hold for the
		// whole group they waited for all of it, and the writer and
		// the clients took turns on the cores (8 clients' 100-row
		// INSERTs ran at 0.93 of one client's rate).
		synced := make(chan error, 1)
		go func() { synced <- w.put(group, true) }()
		// The write first: a new goroutine waits in this one's
		// processor's next slot, where an idle processor takes it
		// only after a 3 µs sleep that the kernel's timer slack and
		// the hypervisor make 80 µs (this project's machine); it
		// waited 117 µs on average, and a lone client's 100-row
		// INSERTs waited for it after staging. Yielding runs it here
		// at once; it enters the kernel, and this goroutine, now on
		// the global queue, is taken by the processor that the go
		// statement woke (24 µs at the median), or by this one when
		// the write's system call lets go of it.
		runtime.Gosched()
		for _, p := range group {
			if !p.staged {
				s.mu.Lock()
				w.stageLocked(p)
				s.mu.Unlock()
			}
		}
		if err := <-synced; err != nil {
			// The group stays in the tree, never readable: no version
			// after it is published, and the database accepts no
			// commit any more.
			w.fail(err, group)
			return false
		}
	}
	now := s.cfg.Clock()
	s.mu.Lock()
	budget := 0
	for _, p := range group {
		if !p.staged {
			w.stageLocked(p)
		}
		budget += s.publishLocked(p.ver, p.touched, p.b.bump)
	}
	s.gcLocked(now, budget)
	w.live = int64(s.slabs.live)
	s.mu.Unlock()
	for _, p := range group {
		p.done <- nil
	}
	return true
}

// stageLocked stages p's batch in the tree. Callers hold s.mu, and stage
// the commits in version order.
func (w *wal) stageLocked(p *pending) {
	p.touched = w.s.stageLocked(p.ver, p.b)
	p.staged = true
	w.unstaged--
}

// stageMin is the fewest writes (keys set or cleared, ranges cleared) of
// a group that the writer stages while its fsync runs, and of a commit
// after which a group's leader lets go of the store's lock (settleGroup).
const stageMin = 64

// unstagedWrites returns the writes of a group's batches not staged yet.
func unstagedWrites(group []*pending) int {
	n := 0
	for _, p := range group {
		if !p.staged {
			n += len(p.b.writes) + len(p.b.clears)
		}
	}
	return n
}

// afterSync returns a sync's error, or after a sync that succeeded the
// fault a test injects (syncFault).
func (w *wal) afterSync(err error) error {
	if w.syncFault != nil && err == nil {
		err = w.syncFault()
	}
	return err
}

// gatherWait bounds how long the writer waits for a group to fill: about
// half of a durable write on this project's machine (~100 µs, direct). Of
// the writer's gathers with 8 clients' single-row INSERTs, 38% ran out
// at 100 µs without the group filled, the disk idle meanwhile. At 50 µs,
// paired medians of interleaved runs (fdbqueue bench, file:): 1-row
// INSERTs from 8 and 32 clients 1.05 and 1.05 (8 rounds), fit pops from
// 8 and 32 consumers 1.06 and 1.06, pops of any task 1.09 and 1.08 (6
// rounds). In a sweep of 0, 25, 50, 100 and 200 µs (3 rounds), 50 beat
// 100 in every round for 8 and 32 clients; the others were mixed.
const gatherWait = 50 * time.Microsecond

// gather waits, briefly, for as many commits as the last group had: the
// clients it just answered are about to commit again, and one fsync for all
// of them beats one for the first and another for the rest (the
// group-commit convoy). A lone client never waits.
func (w *wal) gather() {
	want := int(w.lastGroup.Load())
	if want <= 1 || w.sync == SyncNone {
		return
	}
	deadline := time.Now().Add(gatherWait)
	for {
		w.mu.Lock()
		n, stopping := len(w.queue), w.stopping
		w.mu.Unlock()
		if n >= want || n == 0 && stopping || time.Now().After(deadline) {
			return
		}
		runtime.Gosched()
	}
}

// encode encodes a group's records into w.buf, for put.
func (w *wal) encode(group []*pending) error {
	if err := w.failure(); err != nil {
		return err
	}
	w.buf = w.buf[:0]
	for _, p := range group {
		var err error
		if w.buf, err = p.b.appendRecord(w.buf, p.ver); err != nil {
			return err
		}
	}
	return nil
}

// put writes the group's records, which encode left in w.buf, to the log,
// and with sync makes them durable, or fails as syncFault says.
func (w *wal) put(group []*pending, sync bool) error {
	var err error
	if sync {
		err = w.afterSync(w.seg.appendSync(w.buf))
	} else {
		err = w.seg.append(w.buf)
	}
	if err != nil {
		return err
	}
	w.sinceCkpt += int64(len(w.buf))
	w.lastVer = group[len(group)-1].ver
	return nil
}

// fail puts the database in the failed state: the group's commits may or
// may not be on disk, and no later commit is accepted. fsync is never
// retried after an error (the kernel may have dropped the dirty pages).
func (w *wal) fail(err error, group []*pending) {
	w.failWith(fmt.Errorf("%w: %w", ErrFailed, err), group)
}

// failWith fails the log with failed (an ErrFailed), unless it failed
// already: group's commits may or may not be on disk, the queued ones
// were not written.
func (w *wal) failWith(err error, group []*pending) {
	w.mu.Lock()
	first := w.failed == nil
	if first {
		w.failed = err
	}
	failed := w.failed
	rest := w.queue
	w.queue = nil
	w.mu.Unlock()
	if first {
		// No commit is published any more, so no watch would fire:
		// they fail now, with the log's error, rather than each
		// waiting out its context (a FOR POP WAIT its timeout).
		w.s.failWatches(failed)
	}
	for _, p := range group {
		p.done <- kv.Join(kv.Errorf(kv.CodeCommitUnknownResult, "the log write failed; this commit may or may not be on disk"), failed)
	}
	for _, p := range rest {
		p.done <- failed
	}
}

// close drains the queue and closes the segment.
func (w *wal) close() error {
	w.mu.Lock()
	w.stopping = true
	w.mu.Unlock()
	w.poke()
	<-w.done
	return w.seg.close()
}

// replaySegment reads the records of one segment, calling apply for each.
// It returns the offset after the last good record, and whether the segment
// ended in a torn or corrupt record. Zero bytes after the last record are
// space reserved for records never written (see segment), not a torn
// record: every record starts with a non-zero length.
func replaySegment(path string, apply func(ver uint64, b *batch) error) (good int64, torn bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return 0, false, err
	}
	if len(data) < len(segMagic) || string(data[:len(segMagic)]) != segMagic {
		// A segment whose header never reached the disk is empty.
		return 0, true, nil
	}
	off := len(segMagic)
	for off < len(data) {
		if zeroTail(data[off:]) {
			return int64(off), false, nil
		}
		if len(data)-off < recHeaderSize {
			return int64(off), true, nil
		}
		n := int(binary.LittleEndian.Uint32(data[off:]))
		sum := binary.LittleEndian.Uint32(data[off+4:])
		if n > maxRecordSize || len(data)-off-recHeaderSize < n {
			return int64(off), true, nil
		}
		payload := data[off+recHeaderSize : off+recHeaderSize+n]
		if crc32.Checksum(payload, castagnoli) != sum {
			return int64(off), true, nil
		}
		ver, b, err := decodeBatch(payload)
		if err != nil && n == 0 {
			// Eight zero bytes, where a torn write left zeros before
			// bytes it wrote: the checksum of nothing is zero.
			return int64(off), true, nil
		}
		if err != nil {
			// Its checksum is right, so no torn write left it: a later
			// version of fdbqueue wrote what this one cannot read (an
			// operation it does not have, say). Cutting the log here, as
			// at a torn tail, would drop that commit and every one after
			// it; the database is not opened instead.
			return int64(off), false, fmt.Errorf("fdbqueue: log segment %s: the record at offset %d has a good checksum but does not decode (%w): a later version of fdbqueue wrote it; open the database with that version", path, off, err)
		}
		if err := apply(ver, b); err != nil {
			return int64(off), false, err
		}
		off += recHeaderSize + n
	}
	return int64(off), false, nil
}
