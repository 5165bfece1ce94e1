package kvtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// The watch tests. A watch that should fire is given watchDeadline to do
// so (an engine on a cluster fires asynchronously); one that should not is
// checked at once after the commit that must not fire it, which can only
// pass wrongly, never fail wrongly.
const watchDeadline = 10 * time.Second

// watchOn commits a transaction that makes a watch on key.
func watchOn(t *testing.T, db kv.Database, key string) kv.Watch {
	t.Helper()
	var w kv.Watch
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		if w != nil {
			w.Cancel() // a retried attempt's watch
		}
		w = tr.Watch([]byte(key))
		return nil
	}))
	return w
}

// watchOnSoon is watchOn where a place is being freed: on FoundationDB a
// watch that fired or was cancelled leaves the count of watches a moment
// later (on the client's network thread), so a watch refused with
// too_many_watches is tried again, until watchDeadline.
func watchOnSoon(t *testing.T, db kv.Database, key string) kv.Watch {
	t.Helper()
	deadline := time.Now().Add(watchDeadline)
	for {
		w := watchOn(t, db, key)
		select {
		case <-w.Done():
			if kv.Code(w.Err()) == kv.CodeTooManyWatches && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
				continue
			}
		default:
		}
		return w
	}
}

func requireFires(t *testing.T, w kv.Watch, why string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(bg, watchDeadline)
	defer cancel()
	require.NoError(t, w.Wait(ctx), why)
}

func requirePending(t *testing.T, w kv.Watch, why string) {
	t.Helper()
	select {
	case <-w.Done():
		t.Fatalf("%s: the watch settled (err %v)", why, w.Err())
	default:
	}
}

func requireFailsWith(t *testing.T, w kv.Watch, code int, why string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(bg, watchDeadline)
	defer cancel()
	err := w.Wait(ctx)
	require.Error(t, err, why)
	require.Equal(t, code, kv.Code(err), "%s: %v", why, err)
	require.Equal(t, code, kv.Code(w.Err()), why)
}

// testWatchFiresOnChange: a watch fires when the key's value changes, from
// absent to present, from one value to another, and to absent (Clear and
// ClearRange); a write of the same value does not fire it.
func testWatchFiresOnChange(t *testing.T, in Instance) {
	db := in.DB
	w := watchOn(t, db, "w")
	set(t, db, "other", "x")
	requirePending(t, w, "a write to another key")
	set(t, db, "w", "1")
	requireFires(t, w, "absent to present")

	w = watchOn(t, db, "w")
	set(t, db, "w", "1")
	requirePending(t, w, "a write of the same value")
	set(t, db, "w", "2")
	requireFires(t, w, "one value to another")

	w = watchOn(t, db, "w")
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		tr.Clear([]byte("w"))
		return nil
	}))
	requireFires(t, w, "cleared")

	absent := watchOn(t, db, "w")
	set(t, db, "w2", "v")
	w = watchOn(t, db, "w2")
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		tr.ClearRange(kv.Range{Begin: []byte("w"), End: []byte("x")})
		return nil
	}))
	requireFires(t, w, "ClearRange over the key")
	requirePending(t, absent, "ClearRange over an absent key leaves it absent")
	absent.Cancel()

	// An atomic add changes the value too.
	w = watchOn(t, db, "n")
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		tr.Add([]byte("n"), 1)
		return nil
	}))
	requireFires(t, w, "an atomic add")
}

// testWatchArmedAtCommit: a watch compares with the value its transaction
// read, and is armed when the transaction commits: a change made by another
// transaction before then fires it on commit (a read-only transaction
// commits without a conflict check), and fails a read-write transaction
// with not_committed, because a watch adds a read conflict on its key.
func testWatchArmedAtCommit(t *testing.T, in Instance) {
	db := in.DB
	set(t, db, "w", "1")

	// The watch reads its starting value at the transaction's read version,
	// which FoundationDB takes lazily: take it before the other write.
	tr, err := db.CreateTransaction(bg)
	require.NoError(t, err)
	_, err = tr.GetReadVersion()
	require.NoError(t, err)
	w := tr.Watch([]byte("w"))
	set(t, db, "w", "2")
	requirePending(t, w, "not armed before its transaction commits")
	require.NoError(t, tr.Commit())
	requireFires(t, w, "the value changed since the transaction read it")

	tr, err = db.CreateTransaction(bg)
	require.NoError(t, err)
	_, err = tr.GetReadVersion()
	require.NoError(t, err)
	w = tr.Watch([]byte("w"))
	tr.Set([]byte("elsewhere"), []byte("x"))
	set(t, db, "w", "3")
	err = tr.Commit()
	require.Equal(t, kv.CodeNotCommitted, kv.Code(err), "a watch adds a read conflict on its key: %v", err)
	requireFailsWith(t, w, kv.CodeNotCommitted, "the commit's error")
	tr.Cancel()
}

// testWatchOwnWrites: the value a watch compares with includes what its
// transaction wrote before the call; a write after it fires the watch once
// the transaction commits.
func testWatchOwnWrites(t *testing.T, in Instance) {
	db := in.DB
	var w kv.Watch
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		tr.Set([]byte("w"), []byte("mine"))
		w = tr.Watch([]byte("w"))
		return nil
	}))
	requirePending(t, w, "its own write before the watch is its starting value")
	set(t, db, "w", "theirs")
	requireFires(t, w, "a later change")

	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		w = tr.Watch([]byte("w"))
		tr.Set([]byte("w"), []byte("changed by its own transaction"))
		return nil
	}))
	requireFires(t, w, "its own write after the watch")
}

// testWatchEndsWithItsTransaction: a watch whose transaction is cancelled,
// or reset for a retry, fails with transaction_cancelled; Cancel fails a
// watch with operation_cancelled; Wait returns when its context ends and
// leaves the watch armed.
func testWatchEndsWithItsTransaction(t *testing.T, in Instance) {
	db := in.DB
	tr, err := db.CreateTransaction(bg)
	require.NoError(t, err)
	w := tr.Watch([]byte("w"))
	tr.Cancel()
	requireFailsWith(t, w, kv.CodeTransactionCancelled, "its transaction was cancelled")

	tr, err = db.CreateTransaction(bg)
	require.NoError(t, err)
	w = tr.Watch([]byte("w"))
	require.NoError(t, tr.OnError(kv.Errorf(kv.CodeNotCommitted, "a conflict")))
	requireFailsWith(t, w, kv.CodeTransactionCancelled, "its transaction was reset")
	tr.Cancel()

	w = watchOn(t, db, "w")
	ctx, cancel := context.WithCancel(bg)
	cancel()
	require.ErrorIs(t, w.Wait(ctx), context.Canceled)
	requirePending(t, w, "a Wait that gave up leaves the watch armed")
	w.Cancel()
	requireFailsWith(t, w, kv.CodeOperationCancelled, "cancelled")
	set(t, db, "w", "after the cancel")
	requireFailsWith(t, w, kv.CodeOperationCancelled, "a cancelled watch stays cancelled")
}

// testWatchLimit: at most MaxWatches watches that have not fired; the next
// fails with too_many_watches (1032) until one fires or is cancelled.
func testWatchLimit(t *testing.T, in Instance) {
	db := in.DB
	max := in.MaxWatches
	if max == 0 {
		max = kv.MaxWatches
	}
	ws := make([]kv.Watch, max)
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		for i := range ws {
			if ws[i] != nil {
				ws[i].Cancel() // a retried attempt's
			}
			ws[i] = tr.Watch([]byte(fmt.Sprintf("w/%05d", i)))
		}
		return nil
	}))
	for _, w := range ws {
		requirePending(t, w, "within the limit")
	}
	over := watchOn(t, db, "w/over")
	requireFailsWith(t, over, kv.CodeTooManyWatches, "one past the limit")

	ws[0].Cancel()
	next := watchOnSoon(t, db, "w/next")
	requirePending(t, next, "a cancelled watch frees its place")
	set(t, db, "w/00001", "fired")
	requireFires(t, ws[1], "changed")
	another := watchOnSoon(t, db, "w/another")
	requirePending(t, another, "a fired watch frees its place")
	for _, w := range append(ws, next, another) {
		w.Cancel()
	}
}
