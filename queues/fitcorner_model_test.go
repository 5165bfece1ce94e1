package queues_test

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/queues"
)

// cornerBounds are cell lower bounds (layout.go's cellGrid): exact cells,
// then powers of two and their multiples, some of them on the boundary
// between two cell widths (at 16 in the legacy layout, at 32 in New's).
var cornerBounds = []int64{0, 1, 2, 3, 7, 8, 15, 16, 17, 18, 24, 30, 32, 36, 48, 60, 64, 96, 112, 120, 128, 144, 1024, 1152, 1280, 1920, 2048}

// cellWidth is the number of values in the cell whose lower bound is lo,
// in a queue with exact cells below below.
func cellWidth(lo, below int64) int64 {
	if lo < below {
		return 1
	}
	return 1 << (bits.Len64(uint64(lo)) - 4)
}

// cornerValue draws a resource value at or around a cell bound: mostly a
// cell's lower corner, else its top, its next value, or the value below.
func cornerValue(r *rand.Rand, below int64) int64 {
	b := cornerBounds[r.IntN(len(cornerBounds))]
	switch r.IntN(6) {
	case 0, 1, 2:
		return b
	case 3:
		return b + cellWidth(b, below) - 1
	case 4:
		return b + 1
	default:
		return max(b-1, 0)
	}
}

// cornerLimits draws limits mostly on cells' lower bounds, where a fit
// pop resolves a straddling cell through its lower corner's shape.
func cornerLimits(r *rand.Rand, d int) []int64 {
	l := make([]int64, d)
	for i := range l {
		l[i] = cornerBounds[r.IntN(len(cornerBounds))]
		if r.IntN(6) == 0 {
			l[i] += r.Int64N(3) - 1
		}
		l[i] = max(l[i], 0)
	}
	return l
}

// TestFitCornerModel: fit pops, peeks and leases with limits on and around
// cells' lower bounds, over queues of tasks at and around cell corners
// with sediment (tasks no limit of the pool fits) at their head, through
// pushes, delays, removes, moves, leases and clears, take what a linear
// search of the model takes. The limits repeat (a small pool), so that
// single fit pops' hints skip step 1, and the pops run plain, in attempts
// alone, and in attempts while another is in flight (claims).
func TestFitCornerModel(t *testing.T) {
	t.Parallel()
	for _, below := range []int64{queues.ExactCellsBelow, queues.LegacyExactCellsBelow} {
		seeds := uint64(3)
		if below == queues.LegacyExactCellsBelow {
			seeds = 1 // the queues of versions before 2026-11-27
		}
		for _, kind := range []queues.Kind{queues.FIFO, queues.Priority} {
			for d := 1; d <= 3; d++ {
				for _, mode := range []string{"plain", "alone", "claims"} {
					for seed := uint64(1); seed <= seeds; seed++ {
						t.Run(fmt.Sprintf("cells%d/%v/d%d/%s/seed%d", below, kind, d, mode, seed), func(t *testing.T) {
							t.Parallel()
							runCornerModel(t, kind, d, mode, seed, 500, below)
						})
					}
				}
			}
		}
	}
}

func runCornerModel(t *testing.T, kind queues.Kind, d int, mode string, seed uint64, steps int, below int64) {
	names := []string{"cpu", "mem", "gpu"}[:d]
	db, q := setupCells(t, below, kind, names...)
	if mode != "plain" {
		claims := queues.NewClaims()
		if mode == "claims" {
			tr, err := db.CreateTransaction(bg)
			require.NoError(t, err)
			other := claims.Begin(tr)
			t.Cleanup(func() { other.Release(false); tr.Cancel() })
		}
		db = claimsDB{Database: db, claims: claims}
	}
	r := rand.New(rand.NewPCG(seed, uint64(d)*7+uint64(kind)))
	m := &model{}
	q = q.WithOptions(queues.Options{Clock: func() time.Time { return modelEpoch.Add(time.Duration(m.now) * time.Second) }})
	pool := make([][]int64, 4)
	for i := range pool {
		pool[i] = cornerLimits(r, d)
	}
	// Sediment: above every limit of the pool in one resource.
	sediment := func() []int64 {
		res := make([]int64, d)
		for i := range res {
			res[i] = cornerValue(r, below)
		}
		res[r.IntN(d)] = 4096 + r.Int64N(64)
		return res
	}
	randRes := func() []int64 {
		if r.IntN(3) == 0 {
			return sediment()
		}
		res := make([]int64, d)
		for i := range res {
			res[i] = cornerValue(r, below)
		}
		return res
	}
	prioOf := func() int64 {
		if kind == queues.FIFO {
			return 0
		}
		return r.Int64N(4)
	}
	var ids []int64
	nextID := int64(1)
	pushItems := func(n int, delayed bool) {
		var its []modelItem
		require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
			its = its[:0]
			for range n {
				it := modelItem{id: nextID, prio: prioOf(), res: randRes()}
				nextID++
				it.val = fmt.Sprint(it.id)
				if delayed {
					it.vis = m.now + 1 + r.Int64N(3)
				}
				if err := q.Push(tr, queues.Item{ID: it.id, Priority: it.prio, Resources: it.res, Value: []byte(it.val), VisibleAt: modelTime(it.vis)}); err != nil {
					return err
				}
				its = append(its, it)
			}
			return nil
		}))
		for _, it := range its {
			m.pushItem(it)
			ids = append(ids, it.id)
		}
	}
	for range 40 {
		pushItems(5, false)
	}
	for step := range steps {
		order := queues.Order(r.IntN(2))
		limits := pool[r.IntN(len(pool))]
		if r.IntN(10) == 0 {
			limits = cornerLimits(r, d)
		}
		switch op := r.IntN(20); {
		case op < 4:
			pushItems(1+r.IntN(4), false)
		case op == 4:
			pushItems(1, true)
		case op < 12: // fit pop or peek
			peek := op == 11
			it, ok := fitOne(t, db, q, order, limits, peek)
			if !peek {
				m.promote(kind)
			}
			bi := m.bestOf(kind, order, limits, peek)
			require.Equal(t, bi >= 0, ok, "step %d order %v limits %v: got %s", step, order, limits, it.Value)
			if ok {
				require.Equal(t, m.items[bi].val, string(it.Value), "step %d order %v limits %v", step, order, limits)
				if !peek {
					m.take(bi)
				}
			}
		case op == 12: // several rows
			n := 1 + r.IntN(4)
			var got []queues.Item
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				var err error
				got, err = q.PopFitN(tr, order, limits, n)
				return err
			}))
			m.promote(kind)
			want := []string{}
			for len(want) < n {
				bi := m.best(kind, order, limits)
				if bi < 0 {
					break
				}
				want = append(want, m.take(bi).val)
			}
			require.Equal(t, want, append([]string{}, values(got)...), "step %d order %v limits %v n %d", step, order, limits, n)
		case op == 13: // a lease of one row, released at once with a delay
			var got []queues.Item
			dur := int64(1 + r.IntN(3))
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				var err error
				got, err = q.Lease(tr, queues.LeaseRequest{Order: order, Limits: limits, N: 1, For: time.Duration(dur) * time.Second})
				return err
			}))
			m.promote(kind)
			bi := m.best(kind, order, limits)
			require.Equal(t, bi >= 0, len(got) == 1, "step %d order %v limits %v", step, order, limits)
			if bi >= 0 {
				require.Equal(t, m.items[bi].val, string(got[0].Value), "step %d order %v limits %v", step, order, limits)
				it := &m.items[bi]
				it.hidden, it.vis, it.attempts = true, m.now+dur, it.attempts+1
				if r.IntN(2) == 0 {
					var ok bool
					require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
						var err error
						ok, err = q.Release(tr, it.id, got[0].Lease, 0)
						return err
					}))
					require.True(t, ok)
					it.hidden, it.vis = false, m.now
				}
			}
		case op == 14 && len(ids) > 0: // remove, move or delay by id
			id := ids[r.IntN(len(ids))]
			mi := m.find(id)
			var ok bool
			switch a := r.IntN(3); {
			case a == 0 && kind == queues.Priority:
				prio := prioOf()
				require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
					var err error
					ok, err = q.Move(tr, id, prio)
					return err
				}))
				require.Equal(t, mi >= 0, ok)
				if ok {
					it := m.take(mi)
					it.prio = prio
					m.pushItem(it)
				}
			case a == 1 && mi >= 0 && m.items[mi].lease == 0:
				at := m.now + r.Int64N(3)
				require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
					var err error
					ok, err = q.SetVisibleAt(tr, id, modelTime(at))
					return err
				}))
				require.True(t, ok)
				m.items[mi].vis, m.items[mi].hidden = at, at > m.now
			default:
				require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
					var err error
					_, ok, err = q.Remove(tr, id)
					return err
				}))
				require.Equal(t, mi >= 0, ok)
				if ok {
					m.take(mi)
				}
			}
		case op == 15:
			m.now += int64(r.IntN(3))
		case op == 16 && r.IntN(8) == 0: // DELETE
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				q.ClearItems(tr)
				return nil
			}))
			m.items = nil
		case op >= 18: // a group's pops: several in one transaction (an attempt of several, out of plain)
			type popAt struct {
				order  queues.Order
				limits []int64
			}
			var pops []popAt
			for range 2 + r.IntN(4) {
				pops = append(pops, popAt{queues.Order(r.IntN(2)), pool[r.IntN(len(pool))]})
			}
			got := make([]string, len(pops))
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				if a, ok := tr.(*queues.Attempt); ok {
					a.Several()
				}
				for i, p := range pops {
					it, _, err := q.PopFit(tr, p.order, p.limits)
					if err != nil {
						return err
					}
					got[i] = string(it.Value)
				}
				return nil
			}))
			m.promote(kind)
			for i, p := range pops {
				want := ""
				if bi := m.best(kind, p.order, p.limits); bi >= 0 {
					want = m.take(bi).val
				}
				require.Equal(t, want, got[i], "step %d pop %d of %d order %v limits %v", step, i, len(pops), p.order, p.limits)
			}
		case op == 17:
			require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error { return q.Check(tr) }), "step %d", step)
		}
	}
}

// naiveFit returns the value of the first visible task in order that fits
// limits, reading the queue in order.
func naiveFit(t *testing.T, db kv.Database, q *queues.Queue, order queues.Order, limits []int64) (string, bool) {
	t.Helper()
	var val string
	ok := false
	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		ok = false
		return q.ScanVisible(tr, order, func(it queues.Item) (bool, error) {
			for i, r := range it.Resources {
				if r > limits[i] {
					return true, nil
				}
			}
			val, ok = string(it.Value), true
			return false, nil
		})
	}))
	return val, ok
}

// TestFitCornerPopConflictsWithChangeOfItsChoice: a fit pop with limits on
// and around cells' lower bounds (resolved through a straddling cell's
// corner), after hints that have it skip step 1 or not, conflicts with
// every concurrent commit that would change what it takes: a push, a pop
// with other limits, a remove, a move, a lease, a release. Serializable
// commits on the embedded engine; the answer after the concurrent commit
// is that of a scan of the queue in order.
func TestFitCornerPopConflictsWithChangeOfItsChoice(t *testing.T) {
	t.Parallel()
	for _, kind := range []queues.Kind{queues.FIFO, queues.Priority} {
		for d := 1; d <= 2; d++ {
			for seed := uint64(1); seed <= 3; seed++ {
				for _, claimed := range []bool{false, true} {
					t.Run(fmt.Sprintf("%v/d%d/seed%d/claims %v", kind, d, seed, claimed), func(t *testing.T) {
						t.Parallel()
						runCornerConflicts(t, kind, d, seed, 250, claimed)
					})
				}
			}
		}
	}
}

// runCornerConflicts runs rounds of a fit pop and a concurrent commit;
// claimed: the pop runs in an attempt while another is in flight, and
// reads through the snapshot, adding the conflicts its reads need.
func runCornerConflicts(t *testing.T, kind queues.Kind, d int, seed uint64, rounds int, claimed bool) {
	names := []string{"cpu", "mem", "gpu"}[:d]
	db, q := setup(t, kind, names...)
	below := q.ExactCells()
	claims := queues.NewClaims()
	if claimed {
		tr, err := db.CreateTransaction(bg)
		require.NoError(t, err)
		other := claims.Begin(tr)
		t.Cleanup(func() { other.Release(false); tr.Cancel() })
	}
	r := rand.New(rand.NewPCG(seed, 31+uint64(d)+uint64(kind)))
	pool := make([][]int64, 3)
	for i := range pool {
		pool[i] = cornerLimits(r, d)
	}
	// Tasks at the pool's corners, in their cells but past the corner
	// (they do not fit), around cell bounds, and sediment (no limit fits).
	randRes := func() []int64 {
		res := make([]int64, d)
		switch r.IntN(10) {
		case 0, 1, 2:
			copy(res, pool[r.IntN(len(pool))])
			if r.IntN(2) == 0 {
				i := r.IntN(d)
				res[i] += r.Int64N(cellWidth(res[i], below))
			}
		case 3, 4, 5:
			for i := range res {
				res[i] = cornerValue(r, below)
			}
		default:
			for i := range res {
				res[i] = cornerValue(r, below)
			}
			res[r.IntN(d)] = 4096
		}
		return res
	}
	prioOf := func() int64 {
		if kind == queues.FIFO {
			return 0
		}
		return r.Int64N(5)
	}
	var ids []int64
	push := func(tr kv.Transaction, prio int64, res []int64) error {
		id := queues.NewID()
		ids = append(ids, id)
		return q.Push(tr, queues.Item{ID: id, Priority: prio, Resources: res, Value: fmt.Append(nil, id)})
	}
	pushOne := func(tr kv.Transaction) error { return push(tr, prioOf(), randRes()) }
	// Sediment at the head in either order (priorities 0 and 4), so that
	// pops mostly turn to the index, then tasks of every kind.
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		for i := range 300 {
			res := make([]int64, d)
			for j := range res {
				res[j] = 4096
			}
			if err := push(tr, int64(i%2)*4, res); err != nil {
				return err
			}
		}
		for range 150 {
			if err := pushOne(tr); err != nil {
				return err
			}
		}
		return nil
	}))
	// Leased tasks, which a concurrent release makes visible again at
	// their places.
	type held struct{ id, lease int64 }
	var leased []held
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		leased = leased[:0]
		for range 40 {
			its, err := q.Lease(tr, queues.LeaseRequest{Order: queues.Order(r.IntN(2)), Limits: pool[r.IntN(len(pool))], N: 1, For: time.Hour})
			if err != nil {
				return err
			}
			for _, it := range its {
				leased = append(leased, held{it.ID, it.Lease})
			}
		}
		return nil
	}))
	mustFail := 0
	for round := range rounds {
		order := queues.Order(r.IntN(2))
		limits := pool[r.IntN(len(pool))]
		// Warm the hints of these limits: misses in a row have the pop
		// skip step 1, or not.
		for range r.IntN(8) {
			require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
				_, _, err := q.PeekFit(tr, order, limits)
				return err
			}))
		}
		tr, err := db.CreateTransaction(bg)
		require.NoError(t, err)
		var popper kv.Transaction = tr
		release := func(bool) {}
		if claimed {
			a := claims.Begin(tr)
			popper, release = a, a.Release
		}
		it, ok, err := q.PopFit(popper, order, limits)
		require.NoError(t, err)
		got := string(it.Value)
		popper.Set(append(q.Range().End, "receipt"...), nil) // a writer, even when it took nothing

		op := r.IntN(7)
		var h held
		if op == 6 && len(leased) > 0 {
			i := r.IntN(len(leased))
			h = leased[i]
			leased = append(leased[:i], leased[i+1:]...)
		}
		require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
			switch {
			case op < 2:
				for range 1 + r.IntN(2) {
					if err := pushOne(tr); err != nil {
						return err
					}
				}
			case op == 2:
				_, _, err := q.PopFit(tr, queues.Order(r.IntN(2)), cornerLimits(r, d))
				return err
			case op == 3 && kind == queues.Priority:
				_, err := q.Move(tr, ids[r.IntN(len(ids))], prioOf())
				return err
			case op == 6 && h.id != 0:
				_, err := q.Release(tr, h.id, h.lease, 0) // (unless removed or moved since)
				return err
			case op == 4:
				_, err := q.Lease(tr, queues.LeaseRequest{Order: queues.Order(r.IntN(2)), Limits: cornerLimits(r, d), N: 1, For: time.Hour})
				return err
			default:
				_, _, err := q.Remove(tr, ids[r.IntN(len(ids))])
				return err
			}
			return nil
		}))
		want, wantOK := naiveFit(t, db, q, order, limits)
		if want != got || wantOK != ok {
			mustFail++
			require.ErrorIs(t, popper.Commit(), kv.ErrNotCommitted,
				"round %d op %d order %v limits %v: took %q (%v), after the concurrent commit %q (%v)", round, op, order, limits, got, ok, want, wantOK)
			release(false)
			continue
		}
		err = popper.Commit()
		if err != nil {
			require.ErrorIs(t, err, kv.ErrNotCommitted)
		}
		release(err == nil)
	}
	require.Positive(t, mustFail)
}

// TestFitCornerConcurrentPopsExactlyOnce: goroutines pop with the same
// limits on a cell's lower bound (the straddling corner), the single pops
// sharing the queue's hints (which have them skip step 1 after misses),
// with multi-row pops and leases among them, in attempts of one Claims
// and plain: each task fitting the limits is taken exactly once, and the
// others stay. Run with -race.
func TestFitCornerConcurrentPopsExactlyOnce(t *testing.T) {
	t.Parallel()
	for _, claimed := range []bool{false, true} {
		t.Run(fmt.Sprintf("claims %v", claimed), func(t *testing.T) {
			t.Parallel()
			db, q := setup(t, queues.Priority, "cpu", "mem")
			if claimed {
				db = claimsDB{Database: db, claims: queues.NewClaims()}
			}
			limits := []int64{2, 1024}
			r := rand.New(rand.NewPCG(7, 7))
			fitting := map[string]bool{}
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				for i := range 600 {
					res := []int64{1 + r.Int64N(2), 1024 + r.Int64N(3)}
					if i < 200 {
						res[1] = 4096 // sediment, ahead in both orders
					}
					val := fmt.Sprint(i)
					if res[1] <= limits[1] {
						fitting[val] = true
					}
					prio := r.Int64N(3)
					if i < 200 {
						prio = int64(i%2) * 4
					}
					if err := q.Push(tr, queues.Item{ID: int64(i + 1), Priority: prio, Resources: res, Value: []byte(val)}); err != nil {
						return err
					}
				}
				return nil
			}))
			const workers = 4
			taken := make([][]string, workers)
			done := make(chan error, workers)
			for w := range workers {
				go func() {
					done <- func() error {
						for i := 0; ; i++ {
							order := queues.Order((w + i) % 2)
							var got []queues.Item
							err := db.Transact(bg, func(tr kv.Transaction) error {
								var err error
								switch {
								case w == 3 && i%3 == 0:
									got, err = q.PopFitN(tr, order, limits, 2)
								case w == 3 && i%3 == 1:
									got, err = q.Lease(tr, queues.LeaseRequest{Order: order, Limits: limits, N: 1, For: time.Hour})
								default:
									got, err = one(q.PopFit(tr, order, limits))
								}
								return err
							})
							if err != nil {
								return err
							}
							if len(got) == 0 {
								return nil
							}
							taken[w] = append(taken[w], values(got)...)
						}
					}()
				}()
			}
			for range workers {
				require.NoError(t, <-done)
			}
			seen := map[string]bool{}
			for _, vs := range taken {
				for _, v := range vs {
					require.False(t, seen[v], "%s taken twice", v)
					require.True(t, fitting[v], "%s does not fit", v)
					seen[v] = true
				}
			}
			require.Len(t, seen, len(fitting))
		})
	}
}
