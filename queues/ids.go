package queues

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// IDs hands out row ids from a counter in the database, as PostgreSQL's
// bigserial does: small, unique among the ids any handle on the database
// draws, and consecutive within one call. Each handle reserves a block of
// ids at a time, in a transaction of its own that reads the counter and
// writes it past the block, and hands the block out from memory: a
// reservation is one transaction a block, and blocks grow as a handle
// uses them (minIDBlock, doubling to maxIDBlock), so a busy process
// reserves rarely: once in 650 100-row INSERTs at the largest. Ids a
// handle does not use before it closes are never handed out: ids have
// gaps, as bigserial's do.
//
// Why a counter, where NewID draws from random starts: a small id packs
// in fewer bytes (a tuple integer below 2^32 takes 5 bytes, a random
// one 9), and every queued row holds its id in three keys (its item, the
// id index, the fit index): 15 bytes a row less on memory:
// (BenchmarkMemoryPerRow), and as much less in every key FoundationDB
// stores and every log record a file: database writes.
//
// A counter does not know of the ids an INSERT gave (a restore's, or a
// program's own): a block may hold one of them. A push that finds an id
// it was handed in the queue fails with ErrDuplicateID and writes
// nothing; its caller then asks Past for ids above the ones the queue
// holds (Queue.IDFloor), and pushes again.
type IDs struct {
	db  kv.Database
	key []byte

	// sem is held (a value in it) by the call using the block, or
	// reserving one: a channel, so that a call waiting for another's
	// reservation gives up when its context ends.
	sem       chan struct{}
	next, end int64 // the block in hand: [next, end)
	size      int64 // the size of the next block reserved
}

// lock takes a.sem, unless ctx ends first.
func (a *IDs) lock(ctx context.Context) error {
	select {
	case a.sem <- struct{}{}:
		return nil
	default:
	}
	select {
	case a.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return &reserveError{ctx.Err()}
	}
}

func (a *IDs) unlock() { <-a.sem }

// The sizes of the blocks a handle reserves: the first, and the most it
// doubles them to.
const (
	minIDBlock = 1 << 10
	maxIDBlock = 1 << 16
)

// MaxAssignedID bounds the ids IDs hands out: 285 years of a million
// ids a second. The ids NewID draws, and earlier versions assigned, lie
// above it but for one block in 1,024: Past does not follow ids given
// up there (a restore of such a table's rows), where the counter's ids
// would pack in 9 bytes again.
const MaxAssignedID = 1 << 53

// NewIDs returns a handle on the id counter at key. Every handle on the
// database must use the same key.
func NewIDs(db kv.Database, key []byte) *IDs {
	return &IDs{db: db, key: key, size: minIDBlock, sem: make(chan struct{}, 1)}
}

// Fill sets ids to consecutive new ids, reserving a block first if the
// block in hand has too few left.
func (a *IDs) Fill(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	n := int64(len(ids))
	if err := a.lock(ctx); err != nil {
		return err
	}
	defer a.unlock()
	if a.end-a.next < n {
		if err := a.reserveLocked(ctx, n, 0); err != nil {
			return err
		}
	}
	for i := range ids {
		ids[i] = a.next + int64(i)
	}
	a.next += n
	return nil
}

// Past makes sure that the ids handed out from now on are above floor:
// the block in hand goes on past floor, if it reaches that far, else a
// new block is reserved above floor (the counter, if below, goes past
// it).
//
// A floor among the ids NewID draws (MaxAssignedID and above, where the
// counter never goes) changes nothing: the counter's ids are below it.
func (a *IDs) Past(ctx context.Context, floor int64) error {
	if floor >= MaxAssignedID-2*maxIDBlock {
		return nil
	}
	if err := a.lock(ctx); err != nil {
		return err
	}
	defer a.unlock()
	if floor < a.end-1 {
		a.next = max(a.next, floor+1)
		return nil
	}
	return a.reserveLocked(ctx, 0, floor)
}

// reserveLocked reserves a block of at least n ids above floor, and makes
// it the block in hand. Callers hold a.sem.
//
// The counter's value is the first id not reserved and the token of the
// reservation that wrote it, each little-endian: a retry after
// commit_unknown_result (1021) that finds its own token there knows its
// first attempt was applied, and takes the block that attempt reserved.
func (a *IDs) reserveLocked(ctx context.Context, n, floor int64) error {
	size := max(a.size, n)
	token := NewID()
	var start int64
	err := a.db.Transact(ctx, func(tr kv.Transaction) error {
		v, err := tr.Get(a.key)
		if err != nil {
			return err
		}
		next := int64(1)
		if v != nil {
			if len(v) != 16 {
				return fmt.Errorf("%w: the id counter holds %d bytes, not 16", ErrCorrupt, len(v))
			}
			next = int64(binary.LittleEndian.Uint64(v))
			if next < 1 || next > MaxAssignedID {
				return fmt.Errorf("%w: the id counter holds %d, not an id from 1 to %d", ErrCorrupt, next, int64(MaxAssignedID))
			}
			if int64(binary.LittleEndian.Uint64(v[8:])) == token {
				start = next - size // this reservation, applied
				return nil
			}
		}
		start = max(next, floor+1) // Past keeps floor below MaxAssignedID
		if start > MaxAssignedID-size {
			return fmt.Errorf("%w: the id counter is at %d; ids above %d are not handed out (give ids in the INSERT)", ErrInvalidItem, start, int64(MaxAssignedID))
		}
		v = binary.LittleEndian.AppendUint64(make([]byte, 0, 16), uint64(start+size))
		tr.Set(a.key, binary.LittleEndian.AppendUint64(v, uint64(token)))
		return nil
	})
	if err != nil {
		return &reserveError{err}
	}
	a.next, a.end = start, start+size
	a.size = min(2*a.size, maxIDBlock)
	return nil
}

// reserveError is a reservation's failure as the statement that needed
// the ids returns it: its text, and what errors.Is finds in it
// (ErrReadOnly, a context's end), but none of its kv error codes. The
// reservation is a transaction of its own, which its own loop retried:
// a conflict or an unknown result there says nothing of the statement's
// transaction, which has not committed, and must not be retried or
// settled as if it had.
type reserveError struct{ err error }

func (e *reserveError) Error() string { return "reserving row ids: " + e.err.Error() }

func (e *reserveError) Is(target error) bool { return errors.Is(e.err, target) }

// IDFloor returns an id the counter of IDs may resume above once a push
// found id in q: the largest of q's ids below MaxAssignedID (in its id
// index, or the last of a run's: see Runs), which skips
// at once every id a restore gave (the ids above are those earlier
// versions drew, which the counter never reaches). It reads through the
// snapshot: what it finds only steers the next ids, which a push checks
// anew.
func (q *Queue) IDFloor(tr kv.ReadTransaction, id int64) (int64, error) {
	snap := tr.Snapshot()
	r := kv.Range{Begin: q.sub[tagIDs], End: q.idKey(MaxAssignedID)}
	lastRead := kv.GetRangeAsync(snap, r, kv.RangeOptions{Limit: 1, Reverse: true})
	var inRuns int64
	if mayHoldRuns(tr) {
		var err error
		if inRuns, err = q.runsFloor(snap); err != nil {
			return 0, err
		}
	}
	last, err := lastRead.Get()
	if err != nil {
		return 0, err
	}
	top := max(id, inRuns)
	if len(last) == 0 {
		return top, nil
	}
	inIndex, err := q.idOfKey(last[0].Key)
	return max(top, inIndex), err
}

// idOfKey returns the id of an id index key.
func (q *Queue) idOfKey(k []byte) (int64, error) {
	id, _, err := tuple.DecodeInt(k[len(q.sub[tagIDs]):])
	return id, err
}
