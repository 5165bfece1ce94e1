// Watches: a key's value compared at commit, then at every change to the
// key as it becomes readable, firing once when it differs.

package embedded

import (
	"bytes"
	"context"
	"slices"

	"github.com/fdbqueue/fdbqueue/kv"
)

// watch implements kv.Watch. It compares against the value its transaction
// read (or wrote before the call); once its transaction commits it is
// registered in the store under its key, and the first commit that
// changes the key's value fires it, once readable: a reader it wakes sees
// the change.
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
	// Compare with the readable value (s.version's) under the read lock,
	// so that no commit becomes readable between the comparison and the
	// registration: a change readable since the transaction read fires
	// the watch now, and one staged but not yet readable (a file
	// database's, while its fsync runs) fires it once readable
	// (fireWatchesLocked). Compared with the staged value, it fired at
	// once, and a consumer woken so read the old value, watched again and
	// was woken again, until the commit was readable.
	s.mu.RLock()
	defer s.mu.RUnlock()
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	rv := s.version.Load()
	var scratch []byte
	for _, w := range ws {
		switch {
		case w.state != watchCreated:
			continue // cancelled meanwhile
		case s.closedErr != nil:
			w.settleLocked(s.closedErr)
			continue
		}
		if w.differs(s.valueLocked(rv, w.key, &scratch)) {
			w.settleLocked(nil)
			continue
		}
		w.state = watchRegistered
		s.watches[string(w.key)] = append(s.watches[string(w.key)], w)
		s.registered.Add(1)
	}
}

// valueLocked returns the value of key a read at rv sees; unlike get, rv
// may be older than a version staged in the tree. Callers hold s.mu.
func (s *store) valueLocked(rv uint64, key []byte, scratch *[]byte) ([]byte, bool) {
	p := probe(scratch, key)
	r, ok := s.tree.Get(p)
	if !ok && s.dead.Len() > 0 {
		// A key whose newest version is a deletion, perhaps one staged
		// after rv, is in s.dead.
		r, ok = s.dead.Get(p)
	}
	if !ok {
		return nil, false
	}
	return s.at(r, rv)
}

// fireWatchesLocked fires, as version ver becomes readable, the watches
// on the keys its commit changed: those of touched, the records it wrote,
// and those its tombstones cover (a range clear of many keys writes no
// record per key, tombs.go). A watch fires if the key's value at ver
// differs from the watched one: a commit that clears a key and sets it
// again to the value it had changes nothing. Each version readable in
// turn fires the watches it changes, even if a later one, readable in
// the same hold of the lock, changes the key back. Callers hold s.mu
// exclusively, and have made ver readable.
func (s *store) fireWatchesLocked(ver uint64, touched []rec) {
	if s.registered.Load() == 0 {
		return
	}
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	var scratch []byte
	for _, r := range touched {
		if ws := s.watches[string(r.key())]; len(ws) > 0 {
			s.fireKeyLocked(ver, r.key(), ws, &scratch)
		}
	}
	// The tombstones are in version order; ver's are the newest readable.
	for i := len(s.tombs) - 1; i >= 0 && s.tombs[i].ver >= ver; i-- {
		if s.tombs[i].ver > ver {
			continue
		}
		r := s.tombs[i].r
		for key, ws := range s.watches {
			if r.Contains([]byte(key)) {
				s.fireKeyLocked(ver, []byte(key), ws, &scratch)
			}
		}
	}
}

// fireKeyLocked fires the watches ws, on key, that differ from its value
// at ver. Callers hold s.mu and s.watchMu.
func (s *store) fireKeyLocked(ver uint64, key []byte, ws []*watch, scratch *[]byte) {
	val, ok := s.valueLocked(ver, key, scratch)
	for _, w := range slices.Clone(ws) {
		if w.differs(val, ok) {
			w.settleLocked(nil)
		}
	}
}

// failWatches fails every watch the store holds, as it closes, and those
// armed later (settleWatches): no commit is coming to fire them (a
// transaction begun before the close may still commit without writes).
func (s *store) failWatches(err error) {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	s.closedErr = err
	for _, ws := range s.watches {
		for _, w := range slices.Clone(ws) {
			w.settleLocked(err)
		}
	}
}
