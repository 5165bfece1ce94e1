package queues

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// TestCarryAloneBacksOff: attempts that pop alone carry their reads to
// the next (carryAlone) while the next takes them over, and mostly stop
// once what they carry is wasted: a push commits before every pop (what
// was carried is stale), or during it (the pop's commit is not alone).
// When pops follow one another again, carrying starts again.
func TestCarryAloneBacksOff(t *testing.T) {
	t.Parallel()
	db, q, r, task := pinnedQueue(t, Priority, 1)
	defer db.Close()
	claims := NewClaims()
	push := func() {
		require.NoError(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
			_, err := q.PushAll(tr, Token{}, []Item{task()})
			return err
		}))
	}
	// pops runs n attempts of one fit pop each, with a push committed
	// before each (before) or during each, before its commit (during), and
	// returns how many carried their reads and how many took over what was
	// carried to them.
	pops := func(n int, before, during bool) (carried, adopted int64) {
		adopted = claims.adopted.Load()
		for range n {
			if before {
				push()
			}
			tr, err := db.CreateTransaction(context.Background())
			require.NoError(t, err)
			a := claims.Begin(tr)
			_, _, err = q.PopFit(a, Order(r.IntN(2)), severalLimits[r.IntN(len(severalLimits))])
			require.NoError(t, err)
			if a.carries {
				carried++
			}
			if during {
				push()
			}
			err = tr.Commit()
			a.Release(err == nil)
			tr.Cancel()
		}
		return carried, claims.adopted.Load() - adopted
	}

	carried, adopted := pops(40, false, false)
	require.Equal(t, int64(40), carried, "pops one after another do not all carry their reads")
	require.GreaterOrEqual(t, adopted, int64(35), "pops one after another do not take over what the one before carried")

	carried, _ = pops(300, true, false)
	require.LessOrEqual(t, carried, int64(14), "pops after pushes go on carrying reads no one takes over")
	require.GreaterOrEqual(t, carried, int64(4), "pops after pushes stop trying to carry their reads")

	carried, adopted = pops(100, false, false)
	require.GreaterOrEqual(t, adopted, int64(100-aloneProbe-2), "pops one after another again do not start carrying again")
	require.GreaterOrEqual(t, carried, adopted)

	carried, _ = pops(300, false, true)
	require.LessOrEqual(t, carried, int64(14), "pops whose commits are not alone go on carrying reads")
}

// TestIdleCarryDropped: a carry no attempt takes over is dropped after an
// idle period or two, so that a consumer gone idle does not keep the
// engine's records it points to alive; pops that follow one another
// faster still take over what the one before carried.
func TestIdleCarryDropped(t *testing.T) {
	t.Parallel()
	db, q, r, task := pinnedQueue(t, Priority, 2)
	defer db.Close()
	require.NoError(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
		items := make([]Item, 200)
		for i := range items {
			items[i] = task()
		}
		_, err := q.PushAll(tr, Token{}, items)
		return err
	}))
	claims := NewClaims()
	claims.idle = 100 * time.Millisecond
	kept := func() bool {
		claims.mu.Lock()
		defer claims.mu.Unlock()
		return claims.carry != nil
	}
	pop := func(commit bool) {
		tr, err := db.CreateTransaction(context.Background())
		require.NoError(t, err)
		defer tr.Cancel()
		a := claims.Begin(tr)
		_, _, err = q.PopFit(a, Order(r.IntN(2)), severalLimits[r.IntN(len(severalLimits))])
		require.NoError(t, err)
		if commit {
			err = tr.Commit()
		}
		a.Release(commit && err == nil)
	}
	for round := range 3 {
		adopted := claims.adopted.Load()
		for range 40 {
			pop(true)
		}
		require.GreaterOrEqual(t, claims.adopted.Load()-adopted, int64(30), "round %d: pops one after another do not take over what the one before carried", round)
		require.True(t, kept(), "round %d: the last pop carried nothing", round)
		if round == 1 {
			// Taken over by a pop that does not commit: the timer finds
			// nothing to drop, and must still run for the next carry.
			pop(false)
			require.False(t, kept())
			time.Sleep(3 * claims.idle)
			continue
		}
		require.Eventually(t, func() bool { return !kept() }, 10*time.Second, 5*time.Millisecond, "round %d: a carry no one takes over is kept", round)
	}
}
