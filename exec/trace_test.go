package exec_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// recorder is a kv.Database that, while on, logs every read and write its
// transactions make, with keys in readable form (see recorder.key). The
// datadriven trace command uses it to pin the keys a statement touches.
type recorder struct {
	kv.Database
	root []byte
	on   bool
	log  []string
}

func (r *recorder) printf(format string, args ...any) {
	if r.on {
		r.log = append(r.log, fmt.Sprintf(format, args...))
	}
}

func (r *recorder) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	return r.Database.Transact(ctx, func(tr kv.Transaction) error { return fn(r.wrap(tr)) })
}

func (r *recorder) ReadTransact(ctx context.Context, fn func(kv.ReadTransaction) error) error {
	return r.Database.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		return fn(recRead{r: tr, rec: r})
	})
}

func (r *recorder) CreateTransaction(ctx context.Context) (kv.Transaction, error) {
	tr, err := r.Database.CreateTransaction(ctx)
	if err != nil {
		return nil, err
	}
	return r.wrap(tr), nil
}

func (r *recorder) wrap(tr kv.Transaction) kv.Transaction {
	return recTx{recRead: recRead{r: tr, rec: r}, tr: tr}
}

// queueTags names the tags under a queue's prefix (see package queues'
// doc and layout.go).
var queueTags = []string{"item", "id", "count", "cell", "celldir", "shape", "shapedir", "mark", "markexp", "oldreceipt", "oldreceiptexp", "signal", "due", "hidden", "receipt", "unique", "uniqueuntil", "stats", "visiblemark", "dirguard", "run"}

// statsNames names the elements after a queue's statistics tag (see
// queues/stats.go): its sub-tags, the counters, and the kinds of hidden
// rows.
var statsNames = struct{ sub, counter, kind []string }{
	sub:     []string{"counter", "due", "visible", "since", "migrate"},
	counter: []string{"", "pushed", "popped", "leased", "acked", "released", "expired", "deadlettered", "deleted", "returned"},
	kind:    []string{"", "leased", "delayed"},
}

// statsElem names the i-th element of a key under a queue's statistics
// tag (t/<table id>/stats/...), if it has a name.
func statsElem(t tuple.Tuple, i int) (string, bool) {
	n, ok := t[i].(int64)
	sub, _ := t[3].(int64)
	var names []string
	switch {
	case !ok:
		return "", false
	case i == 3:
		names = statsNames.sub
	case i == 4 && sub == 0:
		names = statsNames.counter
	case i == 4 && sub == 1:
		names = statsNames.kind
	}
	if n < 0 || int(n) >= len(names) {
		return "", false
	}
	return names[n], true
}

// key renders a key as /elem/elem/... : the tuple after the root, with a
// queue's tags by name (t/<table id>/item/...). Expiry times come from the
// executor's clock, which Deterministic stops, so they print as they are.
func (r *recorder) key(k []byte) string {
	rest, ok := bytes.CutPrefix(k, r.root)
	if !ok {
		return fmt.Sprintf("%q (outside the root)", k)
	}
	t, err := tuple.Unpack(rest)
	if err != nil {
		return fmt.Sprintf("%q (not a tuple)", k)
	}
	var b strings.Builder
	for i, el := range t {
		if i >= 3 && t[0] == "t" && t[2] == int64(slices.Index(queueTags, "stats")) {
			if name, ok := statsElem(t, i); ok {
				if name != "" {
					b.WriteString("/" + name)
				}
				continue
			}
		}
		b.WriteByte('/')
		switch {
		case i == 2 && t[0] == "t":
			if tag, ok := el.(int64); ok && tag >= 0 && int(tag) < len(queueTags) {
				b.WriteString(queueTags[tag])
				continue
			}
		}
		switch x := el.(type) {
		case []byte:
			fmt.Fprintf(&b, "%q", x)
		case nil:
			b.WriteString("nil")
		default:
			fmt.Fprint(&b, x)
		}
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}

// span renders a range: /prefix/* for every key under a prefix, else
// [begin, end).
func (r *recorder) span(rg kv.Range) string {
	if len(rg.Begin) > 0 && bytes.Equal(rg.End, kv.Strinc(rg.Begin)) {
		return r.key(rg.Begin) + "/*"
	}
	return "[" + r.bound(rg.Begin) + ", " + r.bound(rg.End) + ")"
}

// bound renders a range's end: a key, or the first key after every key
// under a prefix, as /prefix/*+.
func (r *recorder) bound(k []byte) string {
	if _, err := tuple.Unpack(bytes.TrimPrefix(k, r.root)); err == nil || len(k) == 0 || k[len(k)-1] == 0 {
		return r.key(k)
	}
	prev := bytes.Clone(k)
	prev[len(prev)-1]--
	if bytes.Equal(kv.Strinc(prev), k) {
		if _, err := tuple.Unpack(bytes.TrimPrefix(prev, r.root)); err == nil {
			return r.key(prev) + "/*+"
		}
	}
	return r.key(k)
}

// recRead records the reads of a transaction, or of its snapshot view.
type recRead struct {
	r    kv.ReadTransaction
	rec  *recorder
	snap bool
}

func (x recRead) suffix() string {
	if x.snap {
		return " snapshot"
	}
	return ""
}

func (x recRead) Get(key []byte) ([]byte, error) {
	x.rec.printf("get %s%s", x.rec.key(key), x.suffix())
	return x.r.Get(key)
}

// GetMany passes the keys on together, as the engine below reads them
// (on FoundationDB, in one round trip), and records a get of each.
func (x recRead) GetMany(keys [][]byte) ([][]byte, error) {
	for _, k := range keys {
		x.rec.printf("get %s%s", x.rec.key(k), x.suffix())
	}
	return kv.GetMany(x.r, keys)
}

// GetAsync and GetRangeAsync pass the reads on in flight, as the engine
// below issues them, and record them as get and range.
func (x recRead) GetAsync(key []byte) kv.FutureValue {
	x.rec.printf("get %s%s", x.rec.key(key), x.suffix())
	return kv.GetAsync(x.r, key)
}

func (x recRead) GetRangeAsync(r kv.Range, opts kv.RangeOptions) kv.FutureRange {
	x.rec.printf("range %s%s%s", x.rec.span(r), rangeOpts(opts.Limit, opts.Reverse), x.suffix())
	return kv.GetRangeAsync(x.r, r, opts)
}

func (x recRead) GetRange(r kv.Range, opts kv.RangeOptions) kv.Iterator {
	x.rec.printf("range %s%s%s", x.rec.span(r), rangeOpts(opts.Limit, opts.Reverse), x.suffix())
	return x.r.GetRange(r, opts)
}

// First keeps the engine's fast path for a range read of one key (see
// kv.First), and records it as the range read it stands for.
func (x recRead) First(r kv.Range, reverse bool) (kv.KeyValue, bool, error) {
	x.rec.printf("range %s%s%s", x.rec.span(r), rangeOpts(1, reverse), x.suffix())
	return kv.First(x.r, r, reverse)
}

func rangeOpts(limit int, reverse bool) string {
	s := ""
	if limit > 0 {
		s += fmt.Sprintf(" limit=%d", limit)
	}
	if reverse {
		s += " reverse"
	}
	return s
}

// MetadataVersion passes the read of the metadata version on (on
// FoundationDB it comes with the read version: no round trip of its own).
func (x recRead) MetadataVersion() ([]byte, error) {
	x.rec.printf("metadata-version%s", x.suffix())
	return kv.MetadataVersion(x.r)
}

func (x recRead) GetReadVersion() (int64, error) { return x.r.GetReadVersion() }
func (x recRead) WriteConflictRanges() kv.WriteConflictRangeSupport {
	return kv.WriteConflictRangesOf(x.r)
}
func (x recRead) Context() context.Context { return x.r.Context() }
func (x recRead) Snapshot() kv.ReadTransaction {
	return recRead{r: x.r.Snapshot(), rec: x.rec, snap: true}
}

// recTx records a transaction's reads and writes.
type recTx struct {
	recRead
	tr kv.Transaction
}

func (x recTx) Set(key, value []byte) {
	x.rec.printf("set %s", x.rec.key(key))
	x.tr.Set(key, value)
}

func (x recTx) Clear(key []byte) {
	x.rec.printf("clear %s", x.rec.key(key))
	x.tr.Clear(key)
}

func (x recTx) ClearRange(r kv.Range) {
	x.rec.printf("clear %s", x.rec.span(r))
	x.tr.ClearRange(r)
}

func (x recTx) Add(key []byte, delta int64) {
	x.rec.printf("add %s %+d", x.rec.key(key), delta)
	x.tr.Add(key, delta)
}

func (x recTx) BitAnd(key, param []byte) {
	x.rec.printf("bit-and %s", x.rec.key(key))
	x.tr.BitAnd(key, param)
}

func (x recTx) CompareAndClear(key, value []byte) {
	x.rec.printf("compare-and-clear %s", x.rec.key(key))
	x.tr.CompareAndClear(key, value)
}

func (x recTx) AddReadConflictKey(key []byte) error {
	x.rec.printf("read-conflict %s", x.rec.key(key))
	return x.tr.AddReadConflictKey(key)
}

func (x recTx) AddReadConflictRange(r kv.Range) error {
	x.rec.printf("read-conflict %s", x.rec.span(r))
	return x.tr.AddReadConflictRange(r)
}

func (x recTx) AddWriteConflictKey(key []byte) error {
	x.rec.printf("write-conflict %s", x.rec.key(key))
	return x.tr.AddWriteConflictKey(key)
}

func (x recTx) AddWriteConflictRange(r kv.Range) error {
	x.rec.printf("write-conflict %s", x.rec.span(r))
	return kv.AddWriteConflictRange(x.tr, r)
}

func (x recTx) BumpMetadataVersion() {
	x.rec.printf("bump metadata-version")
	kv.BumpMetadataVersion(x.tr)
}

func (x recTx) Watch(key []byte) kv.Watch {
	x.rec.printf("watch %s", x.rec.key(key))
	return x.tr.Watch(key)
}

func (x recTx) Commit() error           { return x.tr.Commit() }
func (x recTx) Cancel()                 { x.tr.Cancel() }
func (x recTx) OnError(err error) error { return x.tr.OnError(err) }
