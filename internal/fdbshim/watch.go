//go:build fdb

package fdbshim

import (
	"bytes"
	"time"
	"unsafe"

	"github.com/fdbqueue/fdbqueue/kv"
)

// watch is a watch set by a transaction: once the transaction commits, it
// fires when the key's value differs from the one the transaction left.
//
// The embedded engine has no watches yet, so the test double polls the key
// (Config.WatchPoll): a change undone before the next poll is missed (the
// real client may miss such an ABA change too), and a watch fires up to one
// poll late. When the engine grows watches, poll is the one function to
// replace.
type watch struct {
	f       *future
	key     []byte
	value   []byte // set at commit
	present bool
}

// watch is fdb_transaction_watch.
func (t *txn) watch(key []byte) unsafe.Pointer {
	f := newFuture(kindVoid)
	t.mu.Lock()
	a := t.a
	code, killCommit := t.checkLocked(a)
	switch {
	case code != 0:
	case bytes.Compare(key, maxKey) >= 0:
		code = errKeyOutsideLegalRange
	case len(key) > keySizeLimit:
		code = errKeyTooLarge
	default:
		a.outstanding[f] = struct{}{}
		a.watches = append(a.watches, &watch{f: f, key: key})
	}
	t.unlock()
	if killCommit {
		t.kill(a, errUsedDuringCommit)
	}
	if code != 0 {
		f.fail(code)
		f.done()
	}
	return f.ptr()
}

// committed hands the watch the commit's result: an error fails it, success
// starts it (or fails it with too_many_watches past the database's limit).
func (w *watch) committed(a *attempt, code int) {
	if code != 0 {
		a.finishErr(w.f, code, nil)
		return
	}
	a.t.mu.Lock()
	_, mine := a.outstanding[w.f]
	delete(a.outstanding, w.f)
	a.t.unlock()
	if !mine {
		w.f.done()
		return
	}
	db := a.t.space.db
	db.mu.Lock()
	if db.watches >= db.maxWatches {
		db.mu.Unlock()
		w.f.fail(errTooManyWatches)
		w.f.done()
		return
	}
	db.watches++
	db.mu.Unlock()
	store, _ := a.t.space.store()
	go w.poll(store, db)
}

// poll looks at the key until its value changes or the watch is cancelled
// (fdb_future_cancel, fdb_future_destroy).
func (w *watch) poll(store kv.Database, db *database) {
	defer func() {
		db.mu.Lock()
		db.watches--
		db.mu.Unlock()
		w.f.done()
	}()
	tick := time.NewTicker(db.cl.cfg.WatchPoll)
	defer tick.Stop()
	for range tick.C {
		if w.f.isReady() {
			return
		}
		var v []byte
		err := store.ReadTransact(bgContext, func(tr kv.ReadTransaction) error {
			var err error
			v, err = tr.Snapshot().Get(w.key)
			return err
		})
		if err != nil {
			w.f.fail(codeOf(err))
			return
		}
		if (v != nil) != w.present || !bytes.Equal(v, w.value) {
			w.f.succeed()
			return
		}
	}
}
