// Watches: a key's value compared at commit, then at every change applied
// to the key, firing once when it differs.

package embedded

import (
	"bytes"
	"context"
	"slices"

	"github.com/fdbqueue/fdbqueue/kv"
)

// watch implements kv.Watch. It compares against the value its transaction
// read (or wrote before the call); once its transaction commits it is
// registered in the store under its key, and every commit that changes the
// key's latest value fires it.
type watch struct {
	s       *store
	key     []byte
	value   []byte // what it compares against
	present bool
	done    chan struct{}

	// Guarded by s.watchMu.
	state watchState
	err   error
}

type watchState uint8

const (
	watchCreated    watchState = iota // its transaction has not committed
	watchRegistered                   // armed, in s.watches
	watchSettled                      // fired, failed or cancelled
)

var _ kv.Watch = (*watch)(nil)

func (w *watch) Done() <-chan struct{} { return w.done }

func (w *watch) Err() error {
	w.s.watchMu.Lock()
	defer w.s.watchMu.Unlock()
	return w.err
}

func (w *watch) Wait(ctx context.Context) error { return kv.WaitWatch(ctx, w.done, w.Err) }

func (w *watch) Cancel() {
	w.s.watchMu.Lock()
	defer w.s.watchMu.Unlock()
	w.settleLocked(kv.Errorf(kv.CodeOperationCancelled, "the watch was cancelled"))
}

// settleLocked fires the watch (err nil) or fails it, once: it leaves the
// registry and stops counting against the limit. Callers hold s.watchMu.
func (w *watch) settleLocked(err error) {
	if w.state == watchSettled {
		return
	}
	if w.state == watchRegistered {
		s := w.s
		k := string(w.key)
		ws := slices.DeleteFunc(s.watches[k], func(x *watch) bool { return x == w })
		if len(ws) == 0 {
			delete(s.watches, k)
		} else {
			s.watches[k] = ws
		}
		s.registered.Add(-1)
	}
	w.s.pendingWatches--
	w.state, w.err = watchSettled, err
	close(w.done)
}

// differs reports whether (val, ok) is not the value the watch compares to.
func (w *watch) differs(val []byte, ok bool) bool {
	return ok != w.present || ok && !bytes.Equal(val, w.value)
}

// Watch implements kv.Transaction.
func (t *txn) Watch(key []byte) kv.Watch {
	s := t.s
	w := &watch{s: s, key: slices.Clone(key), done: make(chan struct{})}
	err := t.check()
	if err == nil {
		err = checkReadKey(key)
	}
	var v []byte
	if err == nil {
		v, err = t.get(key, true)
	}
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	s.pendingWatches++ // settleLocked counts it out again
	switch {
	case err != nil:
		w.settleLocked(err)
	case s.pendingWatches > s.cfg.MaxWatches:
		w.settleLocked(kv.Errorf(kv.CodeTooManyWatches, "the database holds %d watches that have not fired; cancel the ones no longer needed", s.cfg.MaxWatches))
	default:
		w.value, w.present = slices.Clone(v), v != nil
		t.addRead(span{begin: w.key})
		t.watches = append(t.watches, w)
	}
	return w
}

// settleWatches arms the transaction's watches after a successful commit
// (err nil), or fails them with the commit's error.
func (t *txn) settleWatches(err error) {
	if len(t.watches) == 0 {
		return
	}
	ws := t.watches
	t.watches = nil
	s := t.s
	if err != nil {
		s.watchMu.Lock()
		for _, w := range ws {
			w.settleLocked(err)
		}
		s.watchMu.Unlock()
		return
	}
	// Compare with the latest value under the read lock, so that no commit
	// lands between the comparison and the registration: a change that
	// did land since the transaction read fires the watch now.
	s.mu.RLock()
	defer s.mu.RUnlock()
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	var scratch []byte
	for _, w := range ws {
		if w.state != watchCreated {
			continue // cancelled meanwhile
		}
		var val []byte
		ok := false
		if r, found := s.tree.Get(probe(&scratch, w.key)); found {
			val, ok = s.at(r, verMask)
		}
		if w.differs(val, ok) {
			w.settleLocked(nil)
			continue
		}
		w.state = watchRegistered
		s.watches[string(w.key)] = append(s.watches[string(w.key)], w)
		s.registered.Add(1)
	}
}

// fireWatchesLocked fires the watches on the entries a commit just
// changed whose new value differs from the watched one. Callers hold s.mu.
func (s *store) fireWatchesLocked(touched []rec) {
	if s.registered.Load() == 0 {
		return
	}
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	for _, r := range touched {
		key, val := r.kv()
		ws := s.watches[string(key)]
		if len(ws) == 0 {
			continue
		}
		ok := !r.del()
		for _, w := range slices.Clone(ws) {
			if w.differs(val, ok) {
				w.settleLocked(nil)
			}
		}
	}
}

// fireWatchesInLocked fires the watches on the keys in r, just cleared by
// a tombstone, that watch a value. Callers hold s.mu.
func (s *store) fireWatchesInLocked(r kv.Range) {
	if s.registered.Load() == 0 {
		return
	}
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	for key, ws := range s.watches {
		if !r.Contains([]byte(key)) {
			continue
		}
		for _, w := range slices.Clone(ws) {
			if w.differs(nil, false) {
				w.settleLocked(nil)
			}
		}
	}
}

// failWatches fails every watch the store holds, as it closes.
func (s *store) failWatches(err error) {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	for _, ws := range s.watches {
		for _, w := range slices.Clone(ws) {
			w.settleLocked(err)
		}
	}
}
