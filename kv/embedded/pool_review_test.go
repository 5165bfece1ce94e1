package embedded_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// held is a slice a read returned, and a copy of it made when it was
// returned: the slice must still equal the copy however many transactions
// ran since.
type held struct {
	what      string
	got, copy []byte
}

type holder struct{ all []held }

func (h *holder) keep(what string, b []byte) {
	h.all = append(h.all, held{what, b, bytes.Clone(b)})
}

func (h *holder) keepRows(what string, rows []kv.KeyValue) {
	for i, r := range rows {
		h.keep(fmt.Sprintf("%s[%d].key", what, i), r.Key)
		h.keep(fmt.Sprintf("%s[%d].value", what, i), r.Value)
	}
}

func (h *holder) check(t *testing.T) {
	t.Helper()
	for _, k := range h.all {
		require.Equal(t, string(k.copy), string(k.got), "%s changed after its transaction ended", k.what)
	}
}

// poolValue is the value of key i of a round: short values fit the
// transaction's byte blocks, long ones (over an eighth of a block) get a
// slice of their own.
func poolValue(round, i int) []byte {
	n := []int{3, 17, 120, 700, 1000}[i%5]
	v := bytes.Repeat([]byte{byte('a' + round%26)}, n)
	copy(v, fmt.Sprintf("%d.%d", round, i))
	return v
}

// readKinds are the read paths, each run alone in a transaction (one read
// of its own writes is enough to keep the transaction's bytes): readOne
// reads the transaction's own writes under prefix, and the store's keys
// under "s/", through the one of kind, keeping what it returns.
var readKinds = []string{"Get", "Snapshot Get", "Get ADD", "GetMany", "Snapshot GetMany", "GetRange", "GetRange reverse",
	"Snapshot GetRange", "First", "First reverse", "Snapshot First", "GetAsync", "Snapshot GetAsync", "GetRangeAsync 1",
	"GetRangeAsync reverse 1", "GetRangeAsync 20", "Snapshot GetRangeAsync 20", "open iterator", "GetRange store overwritten"}

func readOne(t *testing.T, tr kv.Transaction, kind, prefix string, h *holder) {
	t.Helper()
	key := func(i int) []byte { return fmt.Appendf(nil, "%s%03d", prefix, i) }
	pre := kv.PrefixRange([]byte(prefix))
	vals := func(vs [][]byte, err error) {
		require.NoError(t, err)
		for i, v := range vs {
			h.keep(fmt.Sprintf("%s[%d]", kind, i), v)
		}
	}
	val := func(v []byte, err error) { vals([][]byte{v}, err) }
	rows := func(rows []kv.KeyValue, err error) {
		require.NoError(t, err)
		require.NotEmpty(t, rows, kind)
		h.keepRows(kind, rows)
	}
	first := func(e kv.KeyValue, ok bool, err error) {
		require.True(t, ok, kind)
		rows([]kv.KeyValue{e}, err)
	}
	switch kind {
	case "Get":
		val(tr.Get(key(1)))
		val(tr.Get([]byte("s/007")))
	case "Snapshot Get":
		val(tr.Snapshot().Get(key(2)))
	case "Get ADD": // on nothing: computed
		val(tr.Get(key(61)))
	case "GetMany":
		vals(kv.GetMany(tr, [][]byte{key(3), []byte("s/001"), key(4), key(62)}))
	case "Snapshot GetMany":
		vals(kv.GetMany(tr.Snapshot(), [][]byte{key(5), key(9)}))
	case "GetRange":
		rows(kv.Collect(tr.GetRange(pre, kv.RangeOptions{})))
	case "GetRange reverse":
		rows(kv.Collect(tr.GetRange(pre, kv.RangeOptions{Reverse: true, Limit: 7})))
	case "Snapshot GetRange": // over writes and the store
		rows(kv.Collect(tr.Snapshot().GetRange(kv.Range{Begin: key(10), End: []byte("s/004")}, kv.RangeOptions{Mode: kv.StreamingModeWantAll})))
	case "First":
		first(kv.First(tr, pre, false))
	case "First reverse":
		first(kv.First(tr, pre, true))
	case "Snapshot First":
		first(kv.First(tr.Snapshot(), pre, false))
	case "GetAsync":
		val(kv.GetAsync(tr, key(11)).Get())
	case "Snapshot GetAsync":
		val(kv.GetAsync(tr.Snapshot(), key(12)).Get())
	case "GetRangeAsync 1":
		rows(kv.GetRangeAsync(tr, pre, kv.RangeOptions{Limit: 1}).Get())
	case "GetRangeAsync reverse 1":
		rows(kv.GetRangeAsync(tr, pre, kv.RangeOptions{Reverse: true, Limit: 1}).Get())
	case "GetRangeAsync 20":
		rows(kv.GetRangeAsync(tr, pre, kv.RangeOptions{Limit: 20}).Get())
	case "Snapshot GetRangeAsync 20":
		rows(kv.GetRangeAsync(tr.Snapshot(), pre, kv.RangeOptions{Limit: 20}).Get())
	case "open iterator": // left open: its current row is held
		it := tr.GetRange(pre, kv.RangeOptions{})
		require.True(t, it.Next())
		rows([]kv.KeyValue{it.KeyValue()}, nil)
	case "GetRange store overwritten": // the store's keys, one of them written (writeRound)
		rows(kv.Collect(tr.Snapshot().GetRange(kv.PrefixRange([]byte("s/")), kv.RangeOptions{})))
	default:
		t.Fatalf("no read kind %q", kind)
	}
}

// writeRound writes the keys readEverything reads: plain sets of values
// of several sizes, atomic operations, clears.
func writeRound(tr kv.Transaction, prefix string, round int) {
	for i := range 60 {
		tr.Set(fmt.Appendf(nil, "%s%03d", prefix, i), poolValue(round, i))
	}
	tr.Set([]byte("s/003"), poolValue(round, 3))
	tr.Add(fmt.Appendf(nil, "%s%03d", prefix, 61), int64(round)+1)
	tr.Add(fmt.Appendf(nil, "%s%03d", prefix, 62), 7)
	tr.CompareAndClear(fmt.Appendf(nil, "%s%03d", prefix, 40), []byte("no"))
	tr.Clear(fmt.Appendf(nil, "%s%03d", prefix, 30))
	tr.ClearRange(kv.Range{Begin: fmt.Appendf(nil, "%s%03d", prefix, 50), End: fmt.Appendf(nil, "%s%03d", prefix, 52)})
}

// garbage runs transactions that write keys and values of the sizes
// writeRound writes, and read their own writes, so that they take the
// buffers the rounds' transactions gave back.
func garbage(t *testing.T, db kv.Database, n int) {
	t.Helper()
	ctx := context.Background()
	for g := range n {
		// A committed one, a cancelled one: both give their buffers
		// back. A commit reported unknown (injected) is retried by no
		// one here: it was applied.
		for _, commit := range []bool{true, false} {
			tr, err := db.CreateTransaction(ctx)
			require.NoError(t, err)
			for i := range 64 {
				tr.Set(fmt.Appendf(nil, "g/%03d", i), bytes.Repeat([]byte{'#'}, len(poolValue(0, i))))
			}
			tr.Add([]byte("g/ctr"), int64(g))
			if commit {
				if err := tr.Commit(); err != nil {
					require.Equal(t, kv.CodeCommitUnknownResult, kv.Code(err), "%v", err)
				}
			}
			tr.Cancel()
		}
	}
}

// TestReadsSurviveBufferReuse: every slice a read of any kind returned
// (Get, GetMany, GetRange forward and reverse, Snapshot reads, kv.First
// on its two paths, futures of points and ranges, an iterator left open),
// from the transaction's own writes or from the store, stays as it was
// once the transaction ends, however it ends (committed, cancelled, reset
// by OnError, a commit refused for a conflict, a commit reported unknown),
// while later transactions write through the buffers it gave back.
func TestReadsSurviveBufferReuse(t *testing.T) {
	t.Parallel()
	ends := []string{"commit", "cancel", "reset", "conflict", "unknown"}
	onMemoryAndFile(t, embedded.Config{}, func(t *testing.T, db *embedded.DB) {
		ctx := context.Background()
		require.NoError(t, kv.Transact(ctx, db, func(tr kv.Transaction) error {
			for i := range 10 {
				tr.Set(fmt.Appendf(nil, "s/%03d", i), bytes.Repeat([]byte{'s'}, 5+i))
			}
			return nil
		}))
		var h holder
		for round := range len(readKinds) * len(ends) {
			prefix := fmt.Sprintf("o/%03d/", round)
			kind, end := readKinds[round%len(readKinds)], ends[round/len(readKinds)]
			tr, err := db.CreateTransaction(ctx)
			require.NoError(t, err)
			writeRound(tr, prefix, round)
			readOne(t, tr, kind, prefix, &h)
			switch end {
			case "commit":
				require.NoError(t, tr.Commit())
			case "cancel":
				tr.Cancel()
			case "reset":
				require.NoError(t, tr.OnError(kv.ErrNotCommitted))
				writeRound(tr, prefix, round)
				readOne(t, tr, kind, prefix, &h)
				require.NoError(t, tr.Commit())
			case "conflict":
				// Another commit changes a key this one read.
				require.NoError(t, tr.AddReadConflictKey([]byte("s/007")))
				require.NoError(t, kv.Transact(ctx, db, func(o kv.Transaction) error {
					o.Set([]byte("s/007"), fmt.Appendf(nil, "changed in round %d", round))
					return nil
				}))
				err := tr.Commit()
				require.ErrorIs(t, err, kv.ErrNotCommitted)
				garbage(t, db, 3)
				tr.Cancel()
			case "unknown":
				// The commit is applied and reported unknown; the
				// retry (OnError) starts over.
				tr.Cancel()
				fdb := embedded.Open("", embedded.Config{Faults: &embedded.Faults{UnknownApplied: 1}})
				ftr, err := fdb.CreateTransaction(ctx)
				require.NoError(t, err)
				writeRound(ftr, prefix, round)
				readOne(t, ftr, kind, prefix, &h)
				err = ftr.Commit()
				require.Error(t, err)
				require.Equal(t, kv.CodeCommitUnknownResult, kv.Code(err))
				garbage(t, fdb, 3)
				require.NoError(t, ftr.OnError(err))
				garbage(t, fdb, 3)
				ftr.Cancel()
				require.NoError(t, fdb.Close())
			}
			garbage(t, db, 2)
		}
		h.check(t)
	})
}

// TestReadsSurviveConcurrentReuse: as TestReadsSurviveBufferReuse, with
// several clients at once, so that buffers move between goroutines and
// commits are settled in groups (and, on file:, written by whichever
// goroutine holds the log). Run it with -race too.
func TestReadsSurviveConcurrentReuse(t *testing.T) {
	t.Parallel()
	const clients, rounds = 4, 15
	ctx := context.Background()
	onMemoryAndFileReopen(t, embedded.Config{}, func(t *testing.T, db *embedded.DB) {
		require.NoError(t, kv.Transact(ctx, db, func(tr kv.Transaction) error {
			for i := range 10 {
				tr.Set(fmt.Appendf(nil, "s/%03d", i), bytes.Repeat([]byte{'s'}, 5+i))
			}
			return nil
		}))
		holders := make([]holder, clients)
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for round := range rounds {
					prefix := fmt.Sprintf("c%d/%02d/", c, round)
					err := kv.Transact(ctx, db, func(tr kv.Transaction) error {
						writeRound(tr, prefix, round)
						var h holder
						readOne(t, tr, readKinds[(c+round)%len(readKinds)], prefix, &h)
						holders[c].all = append(holders[c].all, h.all...)
						return nil
					})
					if err != nil {
						errs <- err
						return
					}
					garbage(t, db, 2)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		for c := range holders {
			holders[c].check(t)
		}
	}, func(t *testing.T, db *embedded.DB) {
		// What was committed is what was written (on file:, what the
		// log holds).
		for c := range clients {
			for round := range rounds {
				prefix := fmt.Sprintf("c%d/%02d/", c, round)
				rows, err := collectRange(ctx, db, kv.PrefixRange([]byte(prefix)))
				require.NoError(t, err)
				want := map[string][]byte{}
				for i := range 60 {
					if i == 30 || i == 50 || i == 51 {
						continue
					}
					want[fmt.Sprintf("%s%03d", prefix, i)] = poolValue(round, i)
				}
				want[fmt.Sprintf("%s%03d", prefix, 61)] = le(int64(round) + 1)
				want[fmt.Sprintf("%s%03d", prefix, 62)] = le(7)
				got := map[string][]byte{}
				for _, r := range rows {
					got[string(r.Key)] = r.Value
				}
				require.Equal(t, want, got, "client %d round %d", c, round)
			}
		}
	})
}

func le(n int64) []byte {
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte(uint64(n) >> (8 * i))
	}
	return b
}

func collectRange(ctx context.Context, db kv.Database, r kv.Range) ([]kv.KeyValue, error) {
	var rows []kv.KeyValue
	err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		var err error
		rows, err = kv.Collect(tr.GetRange(r, kv.RangeOptions{}))
		return err
	})
	return rows, err
}

// TestHistoryKeysSurviveReuse: the history a commit leaves for the
// conflict check keeps its keys, whatever the write to them (a plain set,
// built ahead; a set with an ADD on top, an ADD, a clear, a
// compare-and-clear, not built ahead; a key longer than the byte blocks
// take; the empty key; a range clear; a write conflict), while later
// transactions write other keys of the same lengths through the buffers
// the writer gave back. A reader of the key that began before the write
// must fail to commit.
func TestHistoryKeysSurviveReuse(t *testing.T) {
	t.Parallel()
	kinds := []string{"set", "set+add", "add", "clear", "compare-and-clear", "long key", "empty key", "big value", "clear range", "write conflict"}
	onMemoryAndFile(t, embedded.Config{RetryLimit: -1}, func(t *testing.T, db *embedded.DB) {
		ctx := context.Background()
		for round := range 3 * len(kinds) {
			kind := kinds[round%len(kinds)]
			key := fmt.Appendf(nil, "k/%02d/%s", round, kind)
			switch kind {
			case "long key":
				key = append(key, bytes.Repeat([]byte{'L'}, 2000)...)
			case "empty key":
				key = []byte{}
			}
			require.NoError(t, kv.Transact(ctx, db, func(tr kv.Transaction) error {
				tr.Set(key, []byte("before")) // there to clear
				return nil
			}))
			reader, err := db.CreateTransaction(ctx)
			require.NoError(t, err)
			_, err = reader.Get(key)
			require.NoError(t, err)

			// The write first: its key at the start of the first
			// byte block, then others.
			require.NoError(t, kv.Transact(ctx, db, func(tr kv.Transaction) error {
				switch kind {
				case "set", "long key", "empty key":
					tr.Set(key, []byte("v"))
				case "set+add":
					tr.Set(key, make([]byte, 8))
					tr.Add(key, 3)
				case "add":
					tr.Add(key, 1)
				case "clear":
					tr.Clear(key)
				case "compare-and-clear":
					tr.CompareAndClear(key, []byte("before"))
				case "big value":
					tr.Set(key, bytes.Repeat([]byte{'B'}, 20_000))
				case "clear range":
					tr.ClearRange(kv.Range{Begin: key, End: kv.KeyAfter(key)})
				case "write conflict":
					if err := tr.AddWriteConflictKey(key); err != nil {
						return err
					}
				}
				for i := range 50 {
					tr.Set(fmt.Appendf(nil, "a/%02d/%03d", round, i), []byte("v"))
				}
				return nil
			}))
			// Others of the same shapes, with other keys.
			for other := range 6 {
				require.NoError(t, kv.Transact(ctx, db, func(tr kv.Transaction) error {
					z := bytes.Repeat([]byte{'z'}, max(len(key), 1))
					switch kind {
					case "set", "long key", "empty key", "big value":
						tr.Set(z, []byte("w"))
					case "set+add":
						tr.Set(z, make([]byte, 8))
						tr.Add(z, 3)
					case "add":
						tr.Add(z, 1)
					case "clear":
						tr.Clear(z)
					default:
						tr.CompareAndClear(z, []byte("before"))
					}
					for i := range 50 {
						tr.Set(fmt.Appendf(nil, "y/%02d/%03d", other, i), []byte("w"))
					}
					return nil
				}))
			}
			reader.Set([]byte("r"), []byte("x"))
			err = reader.Commit()
			require.ErrorIs(t, err, kv.ErrNotCommitted, "round %d (%s): the read of the key conflicts with the write committed after it", round, kind)
			reader.Cancel()
		}
	})
}

// TestCommitAgainAfterUnknown: a commit reported unknown (applied, an
// injected fault) leaves the transaction active, and the transaction may
// go on and commit again without OnError. Its second batch's records
// built ahead must be its own: where the first batch had a record built
// ahead at an index whose write is not built ahead now (the batch has
// fewer writes, a range clear dropped some, and a clear sorts first),
// the first batch's record, installed in the store, must not be written
// over, nor its key stand for the write's in the conflict history.
func TestCommitAgainAfterUnknown(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{Faults: &embedded.Faults{UnknownApplied: 1}})
	defer db.Close()
	ctx := context.Background()
	w, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	defer w.Cancel()
	for _, k := range []string{"b", "c", "d"} {
		w.Set([]byte(k), []byte("1"))
	}
	require.Equal(t, kv.CodeCommitUnknownResult, kv.Code(w.Commit()))

	// A reader as of the first commit, which read a.
	reader, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	defer reader.Cancel()
	_, err = reader.Get([]byte("a"))
	require.NoError(t, err)

	// Fewer writes than the first batch: c and d are dropped.
	w.ClearRange(kv.Range{Begin: []byte("c"), End: []byte("e")})
	w.Clear([]byte("a")) // sorts before b, not built ahead
	w.Set([]byte("b"), []byte("2"))
	require.Equal(t, kv.CodeCommitUnknownResult, kv.Code(w.Commit()))

	// The reader still reads the first commit's b.
	rows, err := kv.Collect(reader.Snapshot().GetRange(kv.Range{Begin: []byte("a"), End: []byte("z")}, kv.RangeOptions{}))
	require.NoError(t, err)
	require.Equal(t, []kv.KeyValue{{Key: []byte("b"), Value: []byte("1")}, {Key: []byte("c"), Value: []byte("1")}, {Key: []byte("d"), Value: []byte("1")}}, rows)
	reader.Set([]byte("r"), []byte("x"))
	require.ErrorIs(t, reader.Commit(), kv.ErrNotCommitted, "a was written after the reader read it")

	check, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	defer check.Cancel()
	rows, err = kv.Collect(check.GetRange(kv.Range{Begin: []byte("a"), End: []byte("z")}, kv.RangeOptions{}))
	require.NoError(t, err)
	require.Equal(t, []kv.KeyValue{{Key: []byte("b"), Value: []byte("2")}, {Key: []byte("r"), Value: []byte("x")}}[:1], rows)
}

// TestIteratorEndsWithItsTransaction: an iterator left open when its
// transaction commits, is cancelled or is reset (OnError) returns no more
// rows, and its Err says why (as a future's Get does), even when the
// rows of a batch it fetched before are left: once the transaction gave
// its buffers back, its writes are no longer there to merge (a committed
// transaction's rows came back without them), and after a reset those
// of the next attempt, whose read conflicts it would write.
func TestIteratorEndsWithItsTransaction(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	ctx := context.Background()
	require.NoError(t, kv.Transact(ctx, db, func(tr kv.Transaction) error {
		for i := range 20 {
			tr.Set(fmt.Appendf(nil, "k%02d", i), []byte("v"))
		}
		return nil
	}))
	for _, end := range []string{"commit", "cancel", "reset"} {
		tr, err := db.CreateTransaction(ctx)
		require.NoError(t, err)
		it := tr.GetRange(kv.PrefixRange([]byte("k")), kv.RangeOptions{})
		require.True(t, it.Next()) // a batch of several rows fetched
		tr.Set([]byte("k05x"), []byte("mine"))
		want := kv.CodeTransactionCancelled
		switch end {
		case "commit":
			require.NoError(t, tr.Commit())
			want = kv.CodeClientInvalidOperation
		case "cancel":
			tr.Cancel()
		case "reset":
			require.NoError(t, tr.OnError(kv.ErrNotCommitted))
			tr.Set([]byte("k03x"), []byte("next attempt's"))
		}
		require.False(t, it.Next(), "%s: a row after the transaction's end", end)
		require.Equal(t, want, kv.Code(it.Err()), "%s: %v", end, it.Err())
		tr.Cancel()
	}
}
