package queues_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/queues"
)

// model is the reference implementation: a slice, searched linearly.
type model struct {
	items []modelItem
	clock int
	now   int64 // the wall clock, in seconds from modelEpoch
}

type modelItem struct {
	id, prio int64
	at       int
	res      []int64
	val      string
	// The lease state: hidden items are invisible until vis (seconds);
	// vis 0 is never set.
	hidden          bool
	vis             int64
	lease, attempts int64
}

var modelEpoch = time.Unix(1_800_000_000, 0)

func modelTime(s int64) time.Time {
	if s == 0 {
		return time.Time{}
	}
	return modelEpoch.Add(time.Duration(s) * time.Second)
}

func (m *model) push(id, prio int64, res []int64, val string) {
	m.pushItem(modelItem{id: id, prio: prio, res: res, val: val})
}

func (m *model) pushItem(it modelItem) {
	m.clock++
	it.at = m.clock
	it.hidden = it.vis > m.now
	m.items = append(m.items, it)
}

// promote is what every pop and lease does first: the hidden items due by
// now become visible, at most promoteBatch (64) of them, in the due
// index's order (due, priority, seq, id).
func (m *model) promote(kind queues.Kind) {
	var due []int
	for i, it := range m.items {
		if it.hidden && it.vis <= m.now {
			due = append(due, i)
		}
	}
	slices.SortFunc(due, func(a, b int) int {
		x, y := m.items[a], m.items[b]
		if x.vis != y.vis {
			return cmp.Compare(x.vis, y.vis)
		}
		if kind == queues.Priority && x.prio != y.prio {
			return cmp.Compare(x.prio, y.prio)
		}
		return cmp.Compare(x.at, y.at)
	})
	for _, i := range due[:min(len(due), 64)] {
		m.items[i].hidden = false
	}
}

// best returns the index of the best visible item (of every item, with
// all) that fits limits (nil: any), or -1.
func (m *model) best(kind queues.Kind, order queues.Order, limits []int64) int {
	return m.bestOf(kind, order, limits, false)
}

func (m *model) bestOf(kind queues.Kind, order queues.Order, limits []int64, all bool) int {
	bi := -1
	for i, it := range m.items {
		if it.hidden && !all {
			continue
		}
		if limits != nil && !slices.EqualFunc(it.res, limits, func(r, l int64) bool { return r <= l }) {
			continue
		}
		if bi < 0 {
			bi = i
			continue
		}
		b := m.items[bi]
		if kind == queues.Priority && it.prio != b.prio {
			if (it.prio < b.prio) == (order == queues.Min) {
				bi = i
			}
			continue
		}
		if it.at < b.at {
			bi = i
		}
	}
	return bi
}

func (m *model) take(i int) modelItem {
	it := m.items[i]
	m.items = slices.Delete(m.items, i, i+1)
	return it
}

func (m *model) find(id int64) int {
	return slices.IndexFunc(m.items, func(it modelItem) bool { return it.id == id })
}

// resourceValue draws from ranges that exercise exact cells (below 16),
// straddling cells (around 100 and 1000) and large values.
func resourceValue(r *rand.Rand) int64 {
	switch r.IntN(4) {
	case 0:
		return r.Int64N(16)
	case 1:
		return 90 + r.Int64N(30)
	case 2:
		return 990 + r.Int64N(30)
	default:
		return r.Int64N(1 << 40)
	}
}

func TestModel(t *testing.T) {
	t.Parallel()
	shapes := []struct {
		name string
		kind queues.Kind
		res  []string
	}{
		{"fifo", queues.FIFO, nil},
		{"priority", queues.Priority, nil},
		{"task1", queues.Priority, []string{"cpu"}},
		{"task2", queues.Priority, []string{"cpu", "mem"}},
		{"task3", queues.Priority, []string{"cpu", "mem", "gpu"}},
		{"fifo-task2", queues.FIFO, []string{"cpu", "mem"}},
	}
	for _, sh := range shapes {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("%s/seed%d", sh.name, seed), func(t *testing.T) {
				t.Parallel()
				runModel(t, sh.kind, sh.res, seed, 1500, false)
			})
		}
		// Pops that claim what they take (claims.go) give the same
		// answers when no other pop is in flight.
		t.Run(sh.name+"/claims", func(t *testing.T) {
			t.Parallel()
			runModel(t, sh.kind, sh.res, 5, 1500, true)
		})
	}
}

// claimsDB runs every transaction in attempts of one Claims, as exec does.
type claimsDB struct {
	kv.Database
	claims *queues.Claims
}

func (c claimsDB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	return c.claims.Transact(ctx, c.Database, fn)
}

func runModel(t *testing.T, kind queues.Kind, resNames []string, seed uint64, steps int, claimed bool) {
	db, q := setup(t, kind, resNames...)
	if claimed {
		claims := queues.NewClaims()
		// An attempt in flight the whole test: the pops see another
		// attempt, and take the path that records their reads.
		tr, err := db.CreateTransaction(bg)
		require.NoError(t, err)
		other := claims.Begin(tr)
		t.Cleanup(func() { other.Release(false); tr.Cancel() })
		db = claimsDB{Database: db, claims: claims}
	}
	r := rand.New(rand.NewPCG(seed, 99))
	m := &model{}
	q = q.WithOptions(queues.Options{Clock: func() time.Time { return modelEpoch.Add(time.Duration(m.now) * time.Second) }})
	var ids []int64
	d := len(resNames)
	randRes := func() []int64 {
		if d == 0 {
			return nil
		}
		res := make([]int64, d)
		for i := range res {
			res[i] = resourceValue(r)
		}
		return res
	}
	orderOf := func() queues.Order { return queues.Order(r.IntN(2)) }
	for step := 0; step < steps; step++ {
		op := r.IntN(16)
		switch {
		case op < 4: // push, sometimes several in one transaction
			n := 1 + r.IntN(3)
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				for i := 0; i < n; i++ {
					id := int64(step*10 + i + 1)
					prio := r.Int64N(5) - 2
					if kind == queues.FIFO {
						prio = 0
					}
					res := randRes()
					if err := q.Push(tr, queues.Item{ID: id, Priority: prio, Resources: res, Value: []byte(fmt.Sprint(id))}); err != nil {
						return err
					}
				}
				return nil
			}))
			// Replay into the model with the same draws: redo them.
			for i := 0; i < n; i++ {
				id := int64(step*10 + i + 1)
				var it queues.Item
				require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
					var err error
					it, _, err = q.Get(tr, id)
					return err
				}))
				m.push(id, it.Priority, it.Resources, string(it.Value))
				ids = append(ids, id)
			}
		case op < 6: // pop or peek in order
			order, peek := orderOf(), r.IntN(3) == 0
			var it queues.Item
			var ok bool
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				var err error
				if peek {
					it, ok, err = q.Peek(tr, order)
				} else {
					it, ok, err = q.Pop(tr, order)
				}
				return err
			}))
			if !peek {
				m.promote(kind)
			}
			bi := m.bestOf(kind, order, nil, peek)
			require.Equal(t, bi >= 0, ok, "step %d", step)
			if ok {
				require.Equal(t, m.items[bi].val, string(it.Value), "step %d order %v", step, order)
				if !peek {
					m.take(bi)
				}
			}
		case op < 8 && d > 0 && r.IntN(3) == 0: // multi-row fit pop
			order, limits := orderOf(), randRes()
			n := 1 + r.IntN(20)
			if r.IntN(8) == 0 {
				n = 1000
			}
			var items []queues.Item
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				var err error
				items, err = q.PopFitN(tr, order, limits, n)
				return err
			}))
			// The model's answer: n successive single pops.
			m.promote(kind)
			var want, got []string
			for len(want) < n {
				bi := m.best(kind, order, limits)
				if bi < 0 {
					break
				}
				want = append(want, m.take(bi).val)
			}
			for _, it := range items {
				got = append(got, string(it.Value))
			}
			require.Equal(t, want, got, "step %d order %v limits %v n %d", step, order, limits, n)
		case op < 8 && d > 0: // fit pop or peek
			order, peek := orderOf(), r.IntN(3) == 0
			limits := randRes()
			it, ok := fitOne(t, db, q, order, limits, peek)
			if !peek {
				m.promote(kind)
			}
			bi := m.bestOf(kind, order, limits, peek)
			require.Equal(t, bi >= 0, ok, "step %d limits %v", step, limits)
			if ok {
				require.Equal(t, m.items[bi].val, string(it.Value), "step %d order %v limits %v", step, order, limits)
				if !peek {
					m.take(bi)
				}
			}
		case op == 8 && len(ids) > 0: // remove or move by id
			id := ids[r.IntN(len(ids))]
			mi := m.find(id)
			if kind == queues.Priority && r.IntN(2) == 0 {
				prio := r.Int64N(5) - 2
				var ok bool
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
			} else {
				var ok bool
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
		case op == 10: // lease, sometimes with limits, sometimes with a dead letter bound
			order := orderOf()
			var limits []int64
			if d > 0 && r.IntN(2) == 0 {
				limits = randRes()
			}
			n, dur := 1+r.IntN(4), int64(1+r.IntN(6))
			maxAttempts := int64(r.IntN(2) * 3)
			var got []queues.Item
			var dead []string
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				var err error
				dead = nil
				got, err = q.Lease(tr, queues.LeaseRequest{Order: order, Limits: limits, N: n, For: time.Duration(dur) * time.Second,
					MaxAttempts: maxAttempts, Dead: func(it queues.Item) error { dead = append(dead, string(it.Value)); return nil }})
				return err
			}))
			m.promote(kind)
			want, wantDead := []string{}, []string(nil)
			for len(want) < n {
				bi := m.best(kind, order, limits)
				if bi < 0 {
					break
				}
				if maxAttempts > 0 && m.items[bi].attempts >= maxAttempts {
					wantDead = append(wantDead, m.take(bi).val)
					continue
				}
				it := &m.items[bi]
				it.hidden, it.vis, it.attempts = true, m.now+dur, it.attempts+1
				want = append(want, it.val)
			}
			require.Equal(t, want, values(got), "step %d order %v limits %v n %d", step, order, limits, n)
			require.Equal(t, wantDead, dead, "step %d", step)
			for _, it := range got {
				mi := m.find(it.ID)
				require.NotZero(t, it.Lease)
				require.Equal(t, m.items[mi].attempts, it.Attempts)
				require.Equal(t, modelTime(m.items[mi].vis), it.VisibleAt)
				m.items[mi].lease = it.Lease
			}
		case op == 11 || op == 12: // ack, extend or release a leased item, maybe with a lost token
			var leased []int
			for i, it := range m.items {
				if it.lease != 0 {
					leased = append(leased, i)
				}
			}
			if len(leased) == 0 {
				continue
			}
			mi := leased[r.IntN(len(leased))]
			mit := m.items[mi]
			var stored queues.Item
			require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
				var err error
				stored, _, err = q.Get(tr, mit.id)
				return err
			}))
			require.Equal(t, mit.val, string(stored.Value))
			require.Equal(t, mit.lease, stored.Lease)
			require.Equal(t, mit.attempts, stored.Attempts)
			require.Equal(t, modelTime(mit.vis), stored.VisibleAt)
			token := mit.lease
			if r.IntN(4) == 0 {
				token++
			}
			action, delay := r.IntN(3), int64(r.IntN(6))
			if action == 1 {
				delay++ // an extension is positive
			}
			var ok bool
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				var err error
				switch action {
				case 0:
					ok, err = q.Ack(tr, mit.id, token)
				case 1:
					ok, err = q.Extend(tr, mit.id, token, time.Duration(delay)*time.Second)
				default:
					ok, err = q.Release(tr, mit.id, token, time.Duration(delay)*time.Second)
				}
				return err
			}))
			require.Equal(t, token == mit.lease, ok, "step %d", step)
			if ok && action == 0 {
				m.take(mi)
			} else if ok {
				m.items[mi].vis = m.now + delay
				m.items[mi].hidden = delay > 0
			}
		case op == 13: // time passes
			m.now += int64(r.IntN(4))
		case op == 14: // a delayed push
			id := int64(step*10 + 1)
			prio := r.Int64N(5) - 2
			if kind == queues.FIFO {
				prio = 0
			}
			it := modelItem{id: id, prio: prio, res: randRes(), val: fmt.Sprint(id), vis: m.now + 1 + r.Int64N(5)}
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				return q.Push(tr, queues.Item{ID: id, Priority: prio, Resources: it.res, Value: []byte(it.val), VisibleAt: modelTime(it.vis)})
			}))
			m.pushItem(it)
			ids = append(ids, id)
		case op == 15: // every row, visible or not, in order
			order := orderOf()
			require.Equal(t, m.sorted(kind, order), scanAll(t, db, q, order), "step %d", step)
		default:
			require.Equal(t, int64(len(m.items)), count(t, db, q))
		}
	}
	require.Equal(t, int64(len(m.items)), count(t, db, q))
}

// sorted returns every item's value, visible or not, in order.
func (m *model) sorted(kind queues.Kind, order queues.Order) []string {
	c := &model{items: slices.Clone(m.items)}
	out := []string{}
	for {
		bi := c.bestOf(kind, order, nil, true)
		if bi < 0 {
			return out
		}
		out = append(out, c.take(bi).val)
	}
}

// fitOne runs one fit pop (or peek) of q in a transaction of its own.
func fitOne(t *testing.T, db kv.Database, q *queues.Queue, order queues.Order, limits []int64, peek bool) (queues.Item, bool) {
	t.Helper()
	var it queues.Item
	var ok bool
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		var err error
		if peek {
			it, ok, err = q.PeekFit(tr, order, limits)
		} else {
			it, ok, err = q.PopFit(tr, order, limits)
		}
		return err
	}))
	return it, ok
}
