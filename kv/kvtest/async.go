package kvtest

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// The contract of reads in flight together (kv.GetAsync, kv.GetRangeAsync;
// kv's package doc, "Reads in flight together").

// asyncTests are Run's tests of futures.
var asyncTests = []struct {
	name string
	fn   func(t *testing.T, in Instance)
}{
	{"AsyncIsSyncRead", testAsyncIsSyncRead},
	{"AsyncReadYourWritesAtIssue", testAsyncReadYourWritesAtIssue},
	{"AsyncConflicts", testAsyncConflicts},
	{"AsyncErrors", testAsyncErrors},
	{"AsyncAnswersAtIssue", testAsyncAnswersAtIssue},
}

// testAsyncIsSyncRead: random interleavings, in one transaction, of writes
// (sets, clears, clear ranges, atomic adds), synchronous reads and futures
// issued and waited for in any order, through the transaction and its
// snapshot view: every read, synchronous or a future's, answers what a
// model of the transaction says the database held when it was issued.
func testAsyncIsSyncRead(t *testing.T, in Instance) {
	for seed := range uint64(8) {
		require.NoError(t, in.DB.Transact(bg, func(tr kv.Transaction) error {
			tr.ClearRange(kv.PrefixRange([]byte("r/")))
			return nil
		}))
		w := &workload{r: rand.New(rand.NewPCG(seed, 27)), committed: map[string]string{}}
		for round := range 4 {
			tr := newTr(t, in.DB)
			w.run(t, tr, fmt.Sprintf("seed %d, transaction %d", seed, round))
		}
	}
}

// workload is testAsyncIsSyncRead's model: what is committed, and what the
// current transaction sees.
type workload struct {
	r         *rand.Rand
	committed map[string]string
	view      map[string]string
	pending   []pendingRead
	log       []string // the transaction's steps, for a failure's message
}

// pendingRead is a future and what it must answer.
type pendingRead struct {
	what  string
	value kv.FutureValue // or
	rows  kv.FutureRange
	want  []string // key=value, or the value alone; nil: absent
}

func (w *workload) key() string {
	if w.r.IntN(6) == 0 {
		return fmt.Sprintf("r/n%d", w.r.IntN(3)) // counters, only ever added to or cleared
	}
	return fmt.Sprintf("r/%02d", w.r.IntN(16))
}

func (w *workload) rangeOf() kv.Range {
	a, b := fmt.Sprintf("r/%02d", w.r.IntN(17)), fmt.Sprintf("r/%02d", w.r.IntN(17))
	if a > b {
		a, b = b, a
	}
	if w.r.IntN(4) == 0 {
		return kv.PrefixRange([]byte("r/")) // the counters too
	}
	return kv.Range{Begin: []byte(a), End: []byte(b)}
}

func (w *workload) run(t *testing.T, tr kv.Transaction, name string) {
	w.view = make(map[string]string, len(w.committed))
	for k, v := range w.committed {
		w.view[k] = v
	}
	w.pending, w.log = w.pending[:0], w.log[:0]
	for step := range 80 {
		var rt kv.ReadTransaction = tr
		if w.r.IntN(3) == 0 {
			rt = tr.Snapshot()
		}
		what := fmt.Sprintf("%s, step %d", name, step)
		switch op := w.r.IntN(12); {
		case op < 2:
			k := fmt.Sprintf("r/%02d", w.r.IntN(16))
			v := strings.Repeat("v", w.r.IntN(3)) + fmt.Sprint(step) // sometimes only digits: short values
			if w.r.IntN(8) == 0 {
				v = "" // present and empty
			}
			tr.Set([]byte(k), []byte(v))
			w.view[k] = v
			w.logf("set %s=%q", k, v)
		case op == 2:
			k := w.key()
			tr.Clear([]byte(k))
			delete(w.view, k)
			w.logf("clear %s", k)
		case op == 3:
			r := w.rangeOf()
			tr.ClearRange(r)
			w.logf("clear range %q", r)
			for k := range w.view {
				if r.Contains([]byte(k)) {
					delete(w.view, k)
				}
			}
		case op == 4:
			k := fmt.Sprintf("r/n%d", w.r.IntN(3))
			d := int64(w.r.IntN(5)) - 2
			tr.Add([]byte(k), d)
			w.logf("add %s %d", k, d)
			var n uint64
			if old, ok := w.view[k]; ok {
				n = binary.LittleEndian.Uint64([]byte(old))
			}
			w.view[k] = string(binary.LittleEndian.AppendUint64(nil, n+uint64(d)))
		case op == 5:
			k := w.key()
			v, err := rt.Get([]byte(k))
			require.NoError(t, err, what)
			w.expect(t, w.value(k), valueOf(v), what+": Get "+k)
		case op == 6:
			r, opts := w.rangeOf(), w.rangeOptions()
			kvs, err := kv.Collect(rt.GetRange(r, opts))
			require.NoError(t, err, what)
			w.expect(t, w.rows(r, opts), rowsOf(kvs), fmt.Sprintf("%s: GetRange %q %+v", what, r, opts))
		case op == 7, op == 8:
			k := w.key()
			w.pending = append(w.pending, pendingRead{
				what:  fmt.Sprintf("%s: GetAsync %s", what, k),
				value: kv.GetAsync(rt, []byte(k)), want: w.value(k),
			})
			w.logf("issue GetAsync %s", k)
		case op == 9, op == 10:
			r, opts := w.rangeOf(), w.rangeOptions()
			w.pending = append(w.pending, pendingRead{
				what: fmt.Sprintf("%s: GetRangeAsync %q %+v", what, r, opts),
				rows: kv.GetRangeAsync(rt, r, opts), want: w.rows(r, opts),
			})
			w.logf("issue GetRangeAsync %q %+v", r, opts)
		default:
			if len(w.pending) > 0 {
				i := w.r.IntN(len(w.pending))
				w.check(t, w.pending[i])
				w.pending = slices.Delete(w.pending, i, i+1)
			}
		}
	}
	for _, p := range w.pending {
		w.check(t, p)
	}
	if w.r.IntN(4) == 0 {
		tr.Cancel()
		return
	}
	require.NoError(t, tr.Commit(), name)
	w.committed = w.view
}

func (w *workload) rangeOptions() kv.RangeOptions {
	return kv.RangeOptions{
		Limit:   []int{0, 0, 1, 2, 5}[w.r.IntN(5)],
		Reverse: w.r.IntN(2) == 0,
		Mode:    kv.StreamingMode(w.r.IntN(3)),
	}
}

// value is the model's value of k: nil if absent.
func (w *workload) value(k string) []string {
	v, ok := w.view[k]
	if !ok {
		return nil
	}
	return []string{v}
}

// rows are the model's key=value rows of a range read.
func (w *workload) rows(r kv.Range, opts kv.RangeOptions) []string {
	var ks []string
	for k := range w.view {
		if r.Contains([]byte(k)) {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	if opts.Reverse {
		slices.Reverse(ks)
	}
	if opts.Limit > 0 && len(ks) > opts.Limit {
		ks = ks[:opts.Limit]
	}
	out := []string{}
	for _, k := range ks {
		out = append(out, k+"="+w.view[k])
	}
	return out
}

// check waits for p's future, which must answer what it was issued for.
func (w *workload) check(t *testing.T, p pendingRead) {
	t.Helper()
	if p.value != nil {
		v, err := p.value.Get()
		require.NoError(t, err, p.what)
		w.expect(t, p.want, valueOf(v), p.what)
		return
	}
	kvs, err := p.rows.Get()
	require.NoError(t, err, p.what)
	w.expect(t, p.want, rowsOf(kvs), p.what)
}

func (w *workload) logf(format string, args ...any) {
	w.log = append(w.log, fmt.Sprintf(format, args...))
}

// expect fails t unless got is want, with the transaction's steps.
func (w *workload) expect(t *testing.T, want, got []string, what string) {
	t.Helper()
	if !slices.Equal(want, got) {
		require.Equal(t, want, got, "%s\nthe transaction's writes and futures:\n%s", what, strings.Join(w.log, "\n"))
	}
}

func valueOf(v []byte) []string {
	if v == nil {
		return nil
	}
	return []string{string(v)}
}

func rowsOf(kvs []kv.KeyValue) []string {
	out := []string{}
	for _, e := range kvs {
		out = append(out, string(e.Key)+"="+string(e.Value))
	}
	return out
}

// testAsyncReadYourWritesAtIssue: a future sees the transaction's writes
// made before it was issued, and none made after, whether the read is
// answered at once or batch by batch (a range of 60 rows of 1,000 bytes,
// several batches on FoundationDB).
func testAsyncReadYourWritesAtIssue(t *testing.T, in Instance) {
	set(t, in.DB, "y/a", "1", "y/c", "3")
	tr := newTr(t, in.DB)
	tr.Set([]byte("y/b"), []byte("2"))
	tr.Add([]byte("y/n"), 1)
	a := kv.GetAsync(tr, []byte("y/a"))
	b := kv.GetAsync(tr.Snapshot(), []byte("y/b"))
	n := kv.GetAsync(tr, []byte("y/n"))
	all := kv.GetRangeAsync(tr, kv.PrefixRange([]byte("y/")), kv.RangeOptions{})
	last := kv.GetRangeAsync(tr.Snapshot(), kv.PrefixRange([]byte("y/")), kv.RangeOptions{Reverse: true, Limit: 1})
	tr.Set([]byte("y/a"), []byte("later"))
	tr.Clear([]byte("y/b"))
	tr.ClearRange(kv.Range{Begin: []byte("y/c"), End: []byte("y/d")})
	tr.Add([]byte("y/n"), 1)
	tr.Set([]byte("y/z"), []byte("26"))

	v, err := a.Get()
	require.NoError(t, err)
	require.Equal(t, "1", string(v))
	v, err = b.Get()
	require.NoError(t, err)
	require.Equal(t, "2", string(v), "the transaction's own write, through the snapshot view too")
	v, err = n.Get()
	require.NoError(t, err)
	require.Equal(t, uint64(1), binary.LittleEndian.Uint64(v), "one add before the read, one after")
	rows, err := all.Get()
	require.NoError(t, err)
	require.Equal(t, []string{"y/a=1", "y/b=2", "y/c=3", "y/n=\x01\x00\x00\x00\x00\x00\x00\x00"}, rowsOf(rows))
	rows, err = last.Get()
	require.NoError(t, err)
	require.Equal(t, []string{"y/n=\x01\x00\x00\x00\x00\x00\x00\x00"}, rowsOf(rows))
	rows, err = kv.GetRangeAsync(tr, kv.PrefixRange([]byte("y/")), kv.RangeOptions{}).Get()
	require.NoError(t, err)
	require.Equal(t, []string{"y/a=later", "y/n=\x02\x00\x00\x00\x00\x00\x00\x00", "y/z=26"}, rowsOf(rows), "a read issued after the writes sees them")
	tr.Cancel()

	// Many batches, with writes into the range before the wait.
	big := strings.Repeat("v", 1000)
	var kvs []string
	for i := range 60 {
		kvs = append(kvs, fmt.Sprintf("z/%03d", i), big)
	}
	set(t, in.DB, kvs...)
	tr = newTr(t, in.DB)
	tr.Set([]byte("z/000"), []byte("mine"))
	fwd := kv.GetRangeAsync(tr, kv.PrefixRange([]byte("z/")), kv.RangeOptions{})
	rev := kv.GetRangeAsync(tr.Snapshot(), kv.PrefixRange([]byte("z/")), kv.RangeOptions{Reverse: true, Limit: 50})
	tr.Set([]byte("z/050"), []byte("later"))
	tr.ClearRange(kv.Range{Begin: []byte("z/010"), End: []byte("z/020")})
	tr.Set([]byte("z/999"), []byte("later"))
	rows, err = fwd.Get()
	require.NoError(t, err)
	require.Len(t, rows, 60)
	require.Equal(t, "z/000=mine", rowsOf(rows[:1])[0])
	for i, e := range rows[1:] {
		require.Equal(t, fmt.Sprintf("z/%03d", i+1), string(e.Key))
		require.Equal(t, big, string(e.Value))
	}
	rows, err = rev.Get()
	require.NoError(t, err)
	require.Len(t, rows, 50)
	require.Equal(t, "z/059", string(rows[0].Key))
	require.Equal(t, "z/010", string(rows[49].Key))
	require.Equal(t, big, string(rows[9].Value), "z/050, written after the read")
}

// testAsyncConflicts: a future's read conflict is the synchronous read's,
// serializable through the transaction and none through the snapshot
// view, and recorded whether Get is called or not.
func testAsyncConflicts(t *testing.T, in Instance) {
	set(t, in.DB, "c/b", "1", "c/d", "2")
	type tc struct {
		name   string
		read   func(rt kv.ReadTransaction) func() error // issues, returns the wait
		write  string                                   // committed by another transaction after the read
		snap   bool
		wait   bool
		expect bool // a conflict
	}
	point := func(k string) func(kv.ReadTransaction) func() error {
		return func(rt kv.ReadTransaction) func() error {
			f := kv.GetAsync(rt, []byte(k))
			return func() error { _, err := f.Get(); return err }
		}
	}
	ranged := func(opts kv.RangeOptions) func(kv.ReadTransaction) func() error {
		return func(rt kv.ReadTransaction) func() error {
			f := kv.GetRangeAsync(rt, kv.Range{Begin: []byte("c/"), End: []byte("c0")}, opts)
			return func() error { _, err := f.Get(); return err }
		}
	}
	var cases []tc
	for _, wait := range []bool{true, false} {
		for _, snap := range []bool{false, true} {
			cases = append(cases,
				tc{"a key read", point("c/k"), "c/k", snap, wait, !snap},
				tc{"a key not read", point("c/k"), "c/l", snap, wait, false},
				tc{"limit 1, before the key", ranged(kv.RangeOptions{Limit: 1}), "c/a", snap, wait, !snap},
				tc{"limit 1, the key", ranged(kv.RangeOptions{Limit: 1}), "c/b", snap, wait, !snap},
				tc{"limit 1, after the key", ranged(kv.RangeOptions{Limit: 1}), "c/c", snap, wait, false},
				tc{"reverse limit 1, after the key", ranged(kv.RangeOptions{Limit: 1, Reverse: true}), "c/e", snap, wait, !snap},
				tc{"reverse limit 1, before the key", ranged(kv.RangeOptions{Limit: 1, Reverse: true}), "c/c", snap, wait, false},
				tc{"the whole range", ranged(kv.RangeOptions{}), "c/z", snap, wait, !snap},
				tc{"a limit past the range's rows", ranged(kv.RangeOptions{Limit: 3}), "c/z", snap, wait, !snap},
				tc{"limit 2, before the last key", ranged(kv.RangeOptions{Limit: 2}), "c/c", snap, wait, !snap},
				tc{"limit 2, after the last key", ranged(kv.RangeOptions{Limit: 2}), "c/e", snap, wait, false},
				tc{"reverse limit 2, after the last key", ranged(kv.RangeOptions{Limit: 2, Reverse: true}), "c/c", snap, wait, !snap},
				tc{"reverse limit 2, before the last key", ranged(kv.RangeOptions{Limit: 2, Reverse: true}), "c/a", snap, wait, false},
			)
		}
	}
	for _, c := range cases {
		name := fmt.Sprintf("%s (snapshot %v, waited for %v)", c.name, c.snap, c.wait)
		tr := newTr(t, in.DB)
		_, err := tr.GetReadVersion()
		require.NoError(t, err)
		var rt kv.ReadTransaction = tr
		if c.snap {
			rt = tr.Snapshot()
		}
		wait := c.read(rt)
		if c.wait {
			require.NoError(t, wait(), name)
		}
		set(t, in.DB, c.write, "x")
		tr.Set([]byte("out"), []byte("1"))
		if err := tr.Commit(); c.expect {
			require.ErrorIs(t, err, kv.ErrNotCommitted, name)
		} else {
			require.NoError(t, err, name)
		}
		require.NoError(t, in.DB.Transact(bg, func(tr kv.Transaction) error {
			tr.ClearRange(kv.Range{Begin: []byte("c/"), End: []byte("c0")})
			tr.Set([]byte("c/b"), []byte("1"))
			tr.Set([]byte("c/d"), []byte("2"))
			return nil
		}))
	}
}

// testAsyncErrors: a future's errors come from Get: the read's own, and
// those of a transaction that ended, was reset, or whose context is done.
func testAsyncErrors(t *testing.T, in Instance) {
	set(t, in.DB, "e/k", "v")
	code := func(f kv.FutureValue) int {
		_, err := f.Get()
		return kv.Code(err)
	}
	rangeCode := func(f kv.FutureRange) int {
		_, err := f.Get()
		return kv.Code(err)
	}
	all := kv.PrefixRange([]byte("e/"))

	tr := newTr(t, in.DB)
	require.Equal(t, kv.CodeKeyOutsideLegalRange, code(kv.GetAsync(tr, []byte("\xff/system"))))
	require.Equal(t, kv.CodeInvertedRange, rangeCode(kv.GetRangeAsync(tr, kv.Range{Begin: []byte("b"), End: []byte("a")}, kv.RangeOptions{})))
	require.Equal(t, kv.CodeKeyOutsideLegalRange, rangeCode(kv.GetRangeAsync(tr, kv.Range{Begin: []byte("a"), End: []byte("\xff\xff")}, kv.RangeOptions{})))
	require.Equal(t, kv.CodeRangeLimitsInvalid, rangeCode(kv.GetRangeAsync(tr.Snapshot(), all, kv.RangeOptions{Limit: -1})))

	// Issued before the commit, waited for after it; issued after it.
	v := kv.GetAsync(tr, []byte("e/k"))
	r := kv.GetRangeAsync(tr.Snapshot(), all, kv.RangeOptions{})
	tr.Set([]byte("e/x"), []byte("1"))
	require.NoError(t, tr.Commit())
	require.Equal(t, kv.CodeClientInvalidOperation, code(v))
	require.Equal(t, kv.CodeClientInvalidOperation, rangeCode(r))
	require.Equal(t, kv.CodeClientInvalidOperation, code(kv.GetAsync(tr, []byte("e/k"))))
	require.Equal(t, kv.CodeClientInvalidOperation, rangeCode(kv.GetRangeAsync(tr, all, kv.RangeOptions{})))

	// Cancelled.
	tr = newTr(t, in.DB)
	v = kv.GetAsync(tr.Snapshot(), []byte("e/k"))
	r = kv.GetRangeAsync(tr, all, kv.RangeOptions{Limit: 1})
	tr.Cancel()
	require.Equal(t, kv.CodeTransactionCancelled, code(v))
	require.Equal(t, kv.CodeTransactionCancelled, rangeCode(r))
	require.Equal(t, kv.CodeTransactionCancelled, code(kv.GetAsync(tr, []byte("e/k"))))

	// A future of an attempt that OnError reset; the next attempt's work.
	tr = newTr(t, in.DB)
	v = kv.GetAsync(tr, []byte("e/k"))
	r = kv.GetRangeAsync(tr, all, kv.RangeOptions{})
	require.NoError(t, tr.OnError(kv.ErrNotCommitted))
	require.Equal(t, kv.CodeTransactionCancelled, code(v))
	require.Equal(t, kv.CodeTransactionCancelled, rangeCode(r))
	got, err := kv.GetAsync(tr, []byte("e/k")).Get()
	require.NoError(t, err)
	require.Equal(t, "v", string(got))

	// The context.
	ctx, cancel := context.WithCancel(bg)
	tr, err = in.DB.CreateTransaction(ctx)
	require.NoError(t, err)
	defer tr.Cancel()
	v = kv.GetAsync(tr, []byte("e/k"))
	r = kv.GetRangeAsync(tr, all, kv.RangeOptions{})
	cancel()
	_, err = v.Get()
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, kv.ErrTransactionCancelled)
	_, err = r.Get()
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, kv.ErrTransactionCancelled)

	// Five seconds after the read version: a read issued then fails
	// (of keys the transaction has not read: see testTransactionTooOld).
	tr = newTr(t, in.DB)
	_, err = tr.Get([]byte("e/k"))
	require.NoError(t, err)
	if in.Advance != nil {
		in.Advance(kv.MaxTransactionAge + time.Second)
	} else {
		time.Sleep(kv.MaxTransactionAge + time.Second)
	}
	_, err = kv.GetAsync(tr, []byte("e/other")).Get()
	require.ErrorIs(t, err, kv.ErrTransactionTooOld)
	require.True(t, kv.IsRetryable(err))
	_, err = kv.GetRangeAsync(tr, kv.PrefixRange([]byte("f/")), kv.RangeOptions{}).Get()
	require.ErrorIs(t, err, kv.ErrTransactionTooOld)
}

// testAsyncAnswersAtIssue: a transaction and its snapshot view say alike
// whether they answer a read when it is issued (kv.AnswersAtIssue); if
// they do, a read made then, synchronously, answers what the future
// issued at the same point answers, after writes that came later too.
func testAsyncAnswersAtIssue(t *testing.T, in Instance) {
	set(t, in.DB, "i/a", "1", "i/c", "3")
	tr := newTr(t, in.DB)
	at := kv.AnswersAtIssue(tr)
	require.Equal(t, at, kv.AnswersAtIssue(tr.Snapshot()))
	if !at {
		return
	}
	all := kv.PrefixRange([]byte("i/"))
	for _, rt := range []kv.ReadTransaction{tr, tr.Snapshot()} {
		for _, reverse := range []bool{false, true} {
			f := kv.GetRangeAsync(rt, all, kv.RangeOptions{Limit: 1, Reverse: reverse})
			e, ok, err := kv.First(rt, all, reverse)
			require.NoError(t, err)
			require.True(t, ok)
			tr.Set([]byte("i/0"), []byte("later"))
			tr.Set([]byte("i/z"), []byte("later"))
			rows, err := f.Get()
			require.NoError(t, err)
			require.Equal(t, rowsOf([]kv.KeyValue{e}), rowsOf(rows))
			tr.Clear([]byte("i/0"))
			tr.Clear([]byte("i/z"))
		}
	}
}
