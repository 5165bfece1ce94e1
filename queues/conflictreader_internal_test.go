package queues

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// TestConflictReaderFuturesRecordAsReads: a conflictReader's futures
// record what the same reads made at once record (the ranges their
// serializable twins would have covered, and the keys they returned),
// whether they are waited for or left for ranges to resolve; forget drops
// the futures in flight as well.
func TestConflictReaderFuturesRecordAsReads(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	key := func(i int) []byte { return fmt.Appendf(nil, "k%02d", i) }
	require.NoError(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
		for i := 0; i < 20; i += 2 {
			tr.Set(key(i), []byte("v"))
		}
		return nil
	}))
	type read struct {
		r    kv.Range
		opts kv.RangeOptions
		key  []byte // a point read, if set
	}
	span := func(a, b int) kv.Range { return kv.Range{Begin: key(a), End: key(b)} }
	reads := []read{
		{r: span(1, 9), opts: kv.RangeOptions{Limit: 2}},
		{r: span(1, 9), opts: kv.RangeOptions{Limit: 2, Reverse: true}},
		{r: span(3, 5), opts: kv.RangeOptions{Limit: 5}},   // fewer rows than the limit: all of it
		{r: span(11, 19), opts: kv.RangeOptions{}},         // no limit
		{r: span(13, 14), opts: kv.RangeOptions{Limit: 1}}, // empty
		{key: key(6)},
		{key: key(7)}, // absent: its key stays in the conflicts
	}
	// reader returns a conflictReader of a new attempt.
	reader := func() *conflictReader {
		tr, err := db.CreateTransaction(context.Background())
		require.NoError(t, err)
		t.Cleanup(tr.Cancel)
		a := NewClaims().Begin(tr)
		t.Cleanup(func() { a.Release(false) })
		return &conflictReader{a: a, snap: tr.Snapshot()}
	}
	records := func(async bool, wait func(i int) bool) ([]kv.Range, [][]byte) {
		c := reader()
		var err error
		for i, rd := range reads {
			switch {
			case !async && rd.key != nil:
				_, err = c.Get(rd.key)
			case !async:
				_, err = kv.Collect(c.GetRange(rd.r, rd.opts))
			case rd.key != nil:
				f := c.GetAsync(rd.key)
				if wait(i) {
					_, err = f.Get()
				}
			default:
				f := c.GetRangeAsync(rd.r, rd.opts)
				if wait(i) {
					_, err = f.Get()
				}
			}
			require.NoError(t, err)
		}
		rs, err := c.ranges()
		require.NoError(t, err)
		rs = slices.Clone(rs)
		slices.SortFunc(rs, func(x, y kv.Range) int {
			if c := bytes.Compare(x.Begin, y.Begin); c != 0 {
				return c
			}
			return bytes.Compare(x.End, y.End)
		})
		seen := slices.Clone(c.seen)
		slices.SortFunc(seen, bytes.Compare)
		return rs, seen
	}
	wantRanges, wantSeen := records(false, nil)
	require.NotEmpty(t, wantSeen)
	for name, wait := range map[string]func(int) bool{
		"all waited":  func(int) bool { return true },
		"none waited": func(int) bool { return false },
		"some waited": func(i int) bool { return i%2 == 0 },
	} {
		gotRanges, gotSeen := records(true, wait)
		require.Equal(t, wantRanges, gotRanges, name)
		require.Equal(t, wantSeen, gotSeen, name)
	}

	// forget drops the futures in flight: a later wait records nothing.
	c := reader()
	f, v := c.GetRangeAsync(span(0, 20), kv.RangeOptions{}), c.GetAsync(key(0))
	c.forget()
	_, err := f.Get()
	require.NoError(t, err)
	_, err = v.Get()
	require.NoError(t, err)
	rs, err := c.ranges()
	require.NoError(t, err)
	require.Empty(t, rs)
	require.Empty(t, c.seen)
}
