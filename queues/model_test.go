package queues_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/queues"
)

// model is the reference implementation: a slice, searched linearly.
type model struct {
	items []modelItem
	clock int
}

type modelItem struct {
	id, prio int64
	at       int
	res      []int64
	val      string
}

func (m *model) push(id, prio int64, res []int64, val string) {
	m.clock++
	m.items = append(m.items, modelItem{id: id, prio: prio, at: m.clock, res: res, val: val})
}

func (m *model) best(kind queues.Kind, order queues.Order, limits []int64) int {
	bi := -1
	for i, it := range m.items {
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
				runModel(t, sh.kind, sh.res, seed, 1500)
			})
		}
	}
}

func runModel(t *testing.T, kind queues.Kind, resNames []string, seed uint64, steps int) {
	db, q := setup(t, kind, resNames...)
	r := rand.New(rand.NewPCG(seed, 99))
	m := &model{}
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
		op := r.IntN(10)
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
			bi := m.best(kind, order, nil)
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
			bi := m.best(kind, order, limits)
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
					m.push(it.id, prio, it.res, it.val)
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
		default:
			require.Equal(t, int64(len(m.items)), count(t, db, q))
		}
	}
	require.Equal(t, int64(len(m.items)), count(t, db, q))
}
