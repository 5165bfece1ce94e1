package kvtest

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// The contract of writes: buffers the caller may reuse, atomic operations
// under concurrency, compare-and-clear, and range clears.

// testWriteBuffersReusable: the writes copy their keys and values, so the
// caller may reuse those bytes at once, as pushes do with one buffer for
// every key they write.
func testWriteBuffersReusable(t *testing.T, in Instance) {
	set(t, in.DB, "w/c", "old", "w/d", "old", "w/e", "old", "w/f", "old")
	tr := newTr(t, in.DB)
	buf := []byte("w/a=1")
	tr.Set(buf[:3], buf[4:])
	copy(buf, "w/b=2")
	tr.Set(buf[:3], buf[4:])
	copy(buf, "w/c")
	tr.Clear(buf[:3])
	begin, end := []byte("w/d"), []byte("w/e")
	tr.ClearRange(kv.Range{Begin: begin, End: end})
	copy(begin, "w/0")
	copy(end, "w/z")
	n := []byte("w/n")
	tr.Add(n, 7)
	copy(n, "w/m")
	cv := []byte("old")
	key := []byte("w/f")
	tr.CompareAndClear(key, cv)
	copy(key, "w/e")
	copy(cv, "new")
	copy(buf, "zzzzz")
	require.NoError(t, tr.Commit())

	got := map[string]string{}
	rd := newTr(t, in.DB)
	it := rd.GetRange(kv.PrefixRange([]byte("w/")), kv.RangeOptions{})
	for it.Next() {
		e := it.KeyValue()
		got[string(e.Key)] = string(e.Value)
	}
	require.NoError(t, it.Err())
	require.Equal(t, map[string]string{
		"w/a": "1", "w/b": "2", "w/e": "old",
		"w/n": string([]byte{7, 0, 0, 0, 0, 0, 0, 0}),
	}, got)
}

func testAtomicAddConcurrent(t *testing.T, in Instance) {
	const workers, each = 16, 100
	var wg sync.WaitGroup
	var failed atomic.Int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				err := in.DB.Transact(bg, func(tr kv.Transaction) error {
					tr.Add([]byte("counter"), 1)
					tr.Add([]byte("sum"), int64(i))
					return nil
				})
				if err != nil {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	require.Zero(t, failed.Load())
	require.Equal(t, uint64(workers*each), binary.LittleEndian.Uint64(get(t, in.DB, "counter")))
	require.Equal(t, uint64(workers*each*(each-1)/2), binary.LittleEndian.Uint64(get(t, in.DB, "sum")))

	// Negative deltas wrap as two's complement, as FoundationDB's ADD does.
	set(t, in.DB, "neg", "\x01\x00\x00\x00\x00\x00\x00\x00")
	require.NoError(t, in.DB.Transact(bg, func(tr kv.Transaction) error {
		tr.Add([]byte("neg"), -3)
		return nil
	}))
	require.Equal(t, int64(-2), int64(binary.LittleEndian.Uint64(get(t, in.DB, "neg"))))
}

// testAtomicAddsInOneTransaction: several ADDs to one key in one
// transaction add up, around a read of the key, a set and a
// compare-and-clear between them, as a group of pops adds to its
// queue's counters once a pop.
func testAtomicAddsInOneTransaction(t *testing.T, in Instance) {
	le := func(n int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(n)) }
	set(t, in.DB, "adds/base", string(le(10)))
	require.NoError(t, in.DB.Transact(bg, func(tr kv.Transaction) error {
		for _, d := range []int64{5, -7, 1 << 40, -(1 << 40)} {
			tr.Add([]byte("adds/base"), d) // 10 + 5 - 7 = 8
		}
		v, err := tr.Get([]byte("adds/base"))
		require.NoError(t, err)
		require.Equal(t, le(8), v)
		tr.Add([]byte("adds/base"), -8)
		tr.CompareAndClear([]byte("adds/base"), le(0)) // cleared at 0
		tr.Add([]byte("adds/base"), 3)
		tr.Add([]byte("adds/base"), 4) // 7 from nothing

		tr.Set([]byte("adds/set"), le(100))
		tr.Add([]byte("adds/set"), -1)
		tr.Add([]byte("adds/set"), -1)

		tr.Add([]byte("adds/new"), -1)
		tr.Add([]byte("adds/new"), 1)
		tr.CompareAndClear([]byte("adds/new"), le(0))
		tr.Add([]byte("adds/new"), 2)
		tr.Add([]byte("adds/new"), -3)
		return nil
	}))
	require.Equal(t, le(7), get(t, in.DB, "adds/base"))
	require.Equal(t, le(98), get(t, in.DB, "adds/set"))
	require.Equal(t, le(-1), get(t, in.DB, "adds/new"))
}

func testCompareAndClear(t *testing.T, in Instance) {
	set(t, in.DB, "a", "x", "b", "y")
	require.NoError(t, in.DB.Transact(bg, func(tr kv.Transaction) error {
		tr.CompareAndClear([]byte("a"), []byte("x"))
		tr.CompareAndClear([]byte("b"), []byte("nope"))
		tr.CompareAndClear([]byte("absent"), []byte("x"))
		return nil
	}))
	require.Nil(t, get(t, in.DB, "a"))
	require.Equal(t, "y", string(get(t, in.DB, "b")))

	// Add then compare-and-clear at zero: a counter that vanishes at zero.
	require.NoError(t, in.DB.Transact(bg, func(tr kv.Transaction) error {
		tr.Add([]byte("c"), 1)
		return nil
	}))
	require.NoError(t, in.DB.Transact(bg, func(tr kv.Transaction) error {
		tr.Add([]byte("c"), -1)
		tr.CompareAndClear([]byte("c"), make([]byte, 8))
		return nil
	}))
	require.Nil(t, get(t, in.DB, "c"))
}

// testBitAnd: FoundationDB's BIT_AND. The value is cut, or extended with
// zero bytes, to the parameter's length, then ANDed with it; an absent
// key, or one the transaction cleared, takes the parameter itself. The
// transaction reads its own result, in a point read and in a range.
func testBitAnd(t *testing.T, in Instance) {
	set(t, in.DB, "and/short", "\xff\x0f", "and/long", "\xff\xff\xff\xff", "and/cleared", "\xff\xff", "and/set", "x")
	require.NoError(t, in.DB.Transact(bg, func(tr kv.Transaction) error {
		tr.BitAnd([]byte("and/absent"), []byte{0xf0, 0x0f})
		tr.BitAnd([]byte("and/short"), []byte{0x3c, 0xff, 0xff}) // extended with a zero byte
		tr.BitAnd([]byte("and/long"), []byte{0x0f})              // cut to one byte
		tr.Clear([]byte("and/cleared"))
		tr.BitAnd([]byte("and/cleared"), []byte{0x01, 0x02})
		tr.Set([]byte("and/set"), []byte{0xaa, 0xaa})
		tr.BitAnd([]byte("and/set"), []byte{0x0f, 0xf0})
		tr.BitAnd([]byte("and/empty"), []byte{})
		v, err := tr.Get([]byte("and/short"))
		require.NoError(t, err)
		require.Equal(t, []byte{0x3c, 0x0f, 0x00}, v)
		require.Equal(t, []string{"and/absent", "and/cleared", "and/empty", "and/long", "and/set", "and/short"},
			rangeKeys(t, tr, "and/", "and0", kv.RangeOptions{}))
		return nil
	}))
	for k, want := range map[string][]byte{
		"and/absent":  {0xf0, 0x0f},
		"and/short":   {0x3c, 0x0f, 0x00},
		"and/long":    {0x0f},
		"and/cleared": {0x01, 0x02},
		"and/set":     {0x0a, 0xa0},
		"and/empty":   {},
	} {
		require.Equal(t, want, get(t, in.DB, k), k)
	}

	// Like ADD, BIT_AND adds no read conflict: two transactions that
	// both AND one key commit, whatever their order.
	a, b := newTr(t, in.DB), newTr(t, in.DB)
	_, err := a.GetReadVersion()
	require.NoError(t, err)
	_, err = b.GetReadVersion()
	require.NoError(t, err)
	a.BitAnd([]byte("and/long"), []byte{0x0e})
	b.BitAnd([]byte("and/long"), []byte{0x07})
	require.NoError(t, a.Commit())
	require.NoError(t, b.Commit())
	require.Equal(t, []byte{0x06}, get(t, in.DB, "and/long"))

	// It is a write: a transaction that read the key conflicts with it.
	r := newTr(t, in.DB)
	_, err = r.Get([]byte("and/long"))
	require.NoError(t, err)
	require.NoError(t, in.DB.Transact(bg, func(tr kv.Transaction) error {
		tr.BitAnd([]byte("and/long"), []byte{0x02})
		return nil
	}))
	r.Set([]byte("and/other"), []byte("x"))
	require.ErrorIs(t, r.Commit(), kv.ErrNotCommitted)

	// A parameter over the value size limit fails the commit.
	tr := newTr(t, in.DB)
	tr.BitAnd([]byte("and/big"), make([]byte, kv.MaxValueSize+1))
	require.Equal(t, kv.CodeValueTooLarge, kv.Code(tr.Commit()))
}

// testBitAndSlots: a value of fixed slots that removals zero one at a
// time with BIT_AND, and that COMPARE_AND_CLEAR drops once every slot is
// zero: several removals in one transaction, and concurrent ones, none of
// which read the value.
func testBitAndSlots(t *testing.T, in Instance) {
	const slots, width = 16, 4
	full := make([]byte, slots*width)
	for i := range full {
		full[i] = byte(1 + i)
	}
	zero := make([]byte, len(full))
	set(t, in.DB, "slots", string(full))
	without := func(i int) []byte {
		p := make([]byte, len(full))
		for j := range p {
			p[j] = 0xff
		}
		clear(p[i*width : (i+1)*width])
		return p
	}
	remove := func(tr kv.Transaction, i int) {
		tr.BitAnd([]byte("slots"), without(i))
		tr.CompareAndClear([]byte("slots"), zero)
	}
	// Slots 0 to 3 in one transaction, reading the value between two.
	require.NoError(t, in.DB.Transact(bg, func(tr kv.Transaction) error {
		remove(tr, 0)
		remove(tr, 1)
		v, err := tr.Get([]byte("slots"))
		require.NoError(t, err)
		require.Equal(t, zero[:2*width], v[:2*width])
		require.Equal(t, full[2*width:], v[2*width:])
		remove(tr, 2)
		remove(tr, 3)
		return nil
	}))
	want := append(append([]byte(nil), zero[:4*width]...), full[4*width:]...)
	require.Equal(t, want, get(t, in.DB, "slots"))

	// The other twelve from as many goroutines: the last one drops the key.
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := 4; i < slots; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := in.DB.Transact(bg, func(tr kv.Transaction) error {
				remove(tr, i)
				return nil
			}); err != nil {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	require.Zero(t, failed.Load())
	require.Nil(t, get(t, in.DB, "slots"))
}

func testClearRange(t *testing.T, in Instance) {
	set(t, in.DB, "a", "1", "b", "2", "c", "3", "d", "4")
	require.NoError(t, in.DB.Transact(bg, func(tr kv.Transaction) error {
		tr.ClearRange(kv.Range{Begin: []byte("b"), End: []byte("d")})
		return nil
	}))
	tr := newTr(t, in.DB)
	require.Equal(t, []string{"a", "d"}, rangeKeys(t, tr, "", "\xff", kv.RangeOptions{}))

	// A range read that overlaps a concurrent clear conflicts.
	reader := newTr(t, in.DB)
	require.Equal(t, []string{"a"}, rangeKeys(t, reader, "a", "b", kv.RangeOptions{}))
	require.NoError(t, in.DB.Transact(bg, func(tr kv.Transaction) error {
		tr.ClearRange(kv.Range{Begin: []byte("a"), End: []byte("c")})
		return nil
	}))
	reader.Set([]byte("out"), []byte("1"))
	require.ErrorIs(t, reader.Commit(), kv.ErrNotCommitted)
}
