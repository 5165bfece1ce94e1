//go:build fdb

package fdbshim

import (
	"bytes"
	"time"
	"unsafe"

	"github.com/fdbqueue/fdbqueue/kv"
)

// watch is a watch set by a transaction: it compares against the value its
// transaction reads at the watch's creation (at the read version, with the
// transaction's own earlier writes), and once the transaction commits it
// fires when the key's value differs from that, so a change made after the
// watch, by its own transaction or another, fires it, as the real client's
// watches do. It counts against max_watches from its creation until it
// settles.
//
// The test double polls the key (Config.WatchPoll): a change undone before
// the next poll is missed (the real client may miss such an ABA change too),
// and a watch fires up to one poll late.
type watch struct {
	f       *future
	key     []byte
	value   []byte // set on the attempt's executor, before its commit runs
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
	case !t.space.db.countWatch():
		code = errTooManyWatches
	default:
		w := &watch{f: f, key: key}
		a.outstanding[f] = struct{}{}
		a.watches = append(a.watches, w)
		a.exec.run(func() { w.start(a) })
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

// start reads the value the watch compares against, and adds the read
// conflict a watch adds on its key. It runs on the attempt's executor, in
// order with the attempt's writes; if the read fails, so does the commit,
// which fails the watch.
func (w *watch) start(a *attempt) {
	tx, code := a.tx()
	if code != 0 {
		return
	}
	v, err := tx.Snapshot().Get(w.key)
	if err != nil {
		return
	}
	w.value, w.present = v, v != nil
	_ = tx.AddReadConflictKey(w.key)
}

// countWatch counts a new watch against max_watches, or reports that the
// database holds as many as it may.
func (d *database) countWatch() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.watches >= d.maxWatches {
		return false
	}
	d.watches++
	return true
}

// uncountWatch is the end of a watch counted by countWatch.
func (d *database) uncountWatch() {
	d.mu.Lock()
	d.watches--
	d.mu.Unlock()
}

// committed hands the watch the commit's result: an error fails it,
// success starts its polling.
func (w *watch) committed(a *attempt, code int) {
	db := a.t.space.db
	if code != 0 {
		db.uncountWatch()
		a.finishErr(w.f, code, nil)
		return
	}
	a.t.mu.Lock()
	_, mine := a.outstanding[w.f]
	delete(a.outstanding, w.f)
	a.t.unlock()
	if !mine {
		db.uncountWatch()
		w.f.done()
		return
	}
	store, _ := a.t.space.store()
	go w.poll(store, db)
}

// poll looks at the key until its value changes or the watch is cancelled
// (fdb_future_cancel, fdb_future_destroy). The watch stops counting against
// max_watches before its future is ready, so a caller woken by it may set a
// new watch at once.
func (w *watch) poll(store kv.Database, db *database) {
	defer w.f.done()
	tick := time.NewTicker(db.cl.cfg.WatchPoll)
	defer tick.Stop()
	for range tick.C {
		if w.f.isReady() {
			db.uncountWatch()
			return
		}
		var v []byte
		err := store.ReadTransact(bgContext, func(tr kv.ReadTransaction) error {
			var err error
			v, err = tr.Snapshot().Get(w.key)
			return err
		})
		if err != nil {
			db.uncountWatch()
			w.f.fail(codeOf(err))
			return
		}
		if (v != nil) != w.present || !bytes.Equal(v, w.value) {
			db.uncountWatch()
			w.f.succeed()
			return
		}
	}
}
