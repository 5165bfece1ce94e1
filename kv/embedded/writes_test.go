package embedded_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// writesModel is what a transaction sees: every key's value.
type writesModel map[string][]byte

// addLE is FoundationDB's ADD, as the model applies it.
func addLE(old []byte, ok bool, param []byte) []byte {
	out := make([]byte, len(param))
	if ok {
		copy(out, old)
	}
	var carry uint16
	for i := range out {
		s := uint16(out[i]) + uint16(param[i]) + carry
		out[i], carry = byte(s), s>>8
	}
	return out
}

func (m writesModel) rangeOf(r kv.Range, reverse bool, limit int) []kv.KeyValue {
	var out []kv.KeyValue
	for k, v := range m {
		if k >= string(r.Begin) && k < string(r.End) {
			out = append(out, kv.KeyValue{Key: []byte(k), Value: v})
		}
	}
	slices.SortFunc(out, func(a, b kv.KeyValue) int { return bytes.Compare(a.Key, b.Key) })
	if reverse {
		slices.Reverse(out)
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// TestWritesModel checks a transaction's buffered writes against a model
// of what it should see: long runs of sets, clears, ADDs and
// COMPARE_AND_CLEARs to a few keys (each key written many times, so that
// the writes to one key fold in the order they were made), range clears,
// and reads of its own writes in between, then the commit, read back by
// another transaction. The keys share a long prefix and differ in their
// length and in zero bytes at their end, where sorting by the bytes after
// the common prefix pads them.
func TestWritesModel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	keys := []string{"p/queue/a", "p/queue/a\x00", "p/queue/a\x00\x00", "p/queue/ab", "p/queue/b",
		"p/queue/b-a-long-suffix-past-16-bytes-1", "p/queue/b-a-long-suffix-past-16-bytes-2", "p/queue/c", "p/r"}
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(seed, 7))
			db := embedded.Open("", embedded.Config{})
			defer db.Close()
			m := writesModel{}
			// A committed state to start from.
			require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
				for _, k := range keys {
					if r.IntN(2) == 0 {
						v := binary.LittleEndian.AppendUint64(nil, r.Uint64()%1000)
						tr.Set([]byte(k), v)
						m[k] = v
					}
				}
				return nil
			}))
			readProb := []int{0, 5, 30}[seed%3] // percent of operations that read
			tr, err := db.CreateTransaction(ctx)
			require.NoError(t, err)
			key := func() string { return keys[r.IntN(len(keys))] }
			for range 300 {
				k := key()
				switch op := r.IntN(100); {
				case op < readProb/2:
					v, err := tr.Get([]byte(k))
					require.NoError(t, err)
					want, ok := m[k]
					if !ok {
						require.Nil(t, v, k)
					} else {
						require.Equal(t, want, v, k)
					}
				case op < readProb:
					a, b := key(), key()
					if a > b {
						a, b = b, a
					}
					rg := kv.Range{Begin: []byte(a), End: []byte(b)}
					reverse, limit := r.IntN(2) == 0, r.IntN(3)
					got, err := kv.Collect(tr.GetRange(rg, kv.RangeOptions{Reverse: reverse, Limit: limit}))
					require.NoError(t, err)
					want := m.rangeOf(rg, reverse, limit)
					require.Equal(t, len(want), len(got), "%q..%q", a, b)
					for i := range want {
						require.Equal(t, want[i].Key, got[i].Key)
						require.Equal(t, want[i].Value, got[i].Value)
					}
				case op < readProb+30:
					v := binary.LittleEndian.AppendUint64(nil, r.Uint64()%1000)
					if r.IntN(4) == 0 {
						v = v[:r.IntN(8)] // a value ADD pads or truncates
					}
					tr.Set([]byte(k), v)
					m[k] = v
				case op < readProb+40:
					tr.Clear([]byte(k))
					delete(m, k)
				case op < readProb+80:
					d := int64(r.IntN(21) - 10)
					tr.Add([]byte(k), d)
					old, ok := m[k]
					m[k] = addLE(old, ok, binary.LittleEndian.AppendUint64(nil, uint64(d)))
				case op < readProb+90:
					v := m[k]
					if r.IntN(2) == 0 {
						v = binary.LittleEndian.AppendUint64(nil, 0)
					}
					tr.CompareAndClear([]byte(k), v)
					if old, ok := m[k]; ok && bytes.Equal(old, v) {
						delete(m, k)
					}
				default:
					a, b := key(), key()
					if a > b {
						a, b = b, a
					}
					tr.ClearRange(kv.Range{Begin: []byte(a), End: []byte(b)})
					for k := range m {
						if k >= a && k < b {
							delete(m, k)
						}
					}
				}
			}
			require.NoError(t, tr.Commit())
			require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
				all := kv.Range{Begin: []byte("p"), End: []byte("q")}
				got, err := kv.Collect(tr.GetRange(all, kv.RangeOptions{}))
				require.NoError(t, err)
				want := m.rangeOf(all, false, 0)
				require.Equal(t, len(want), len(got))
				for i := range want {
					require.Equal(t, string(want[i].Key), string(got[i].Key))
					require.Equal(t, want[i].Value, got[i].Value, "%q", want[i].Key)
				}
				return nil
			}))
		})
	}
}

// TestConflictKeysLeaveTheClockToTheCommit: a read conflict added once the
// transaction has its read version reads no clock, so it succeeds past the
// transaction's age limit and timeout; the commit still fails such a
// transaction.
func TestConflictKeysLeaveTheClockToTheCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		timeout time.Duration
		want    error
	}{
		{"too old", 0, kv.ErrTransactionTooOld},
		{"timed out", 2 * time.Second, kv.ErrTransactionTimedOut},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
			db := embedded.Open("", embedded.Config{Clock: clock.Now, TransactionTimeout: c.timeout})
			defer db.Close()
			tr, err := db.CreateTransaction(ctx)
			require.NoError(t, err)
			_, err = tr.Get([]byte("a"))
			require.NoError(t, err)
			clock.Advance(kv.MaxTransactionAge + time.Second)
			require.NoError(t, tr.AddReadConflictKey([]byte("b")))
			require.NoError(t, tr.AddReadConflictRange(kv.Range{Begin: []byte("c"), End: []byte("d")}))
			tr.Set([]byte("e"), []byte("v"))
			require.ErrorIs(t, tr.Commit(), c.want)
			_, err = tr.Get([]byte("a"))
			require.ErrorIs(t, err, c.want)
		})
	}
}
