//go:build fdb

package fdb

import (
	"context"
	"sync"

	"github.com/apple/foundationdb/bindings/go/src/fdb"

	"github.com/fdbqueue/fdbqueue/kv"
)

// Watch implements kv.Transaction over the bindings' watch future.
func (t *txn) Watch(key []byte) kv.Watch {
	w := &watch{done: make(chan struct{})}
	if err := t.check(); err != nil {
		w.settle(err)
		return w
	}
	w.f = t.tr.Watch(t.key(key))
	go func() {
		// The bindings wait on the future's callback, not on a thread.
		w.settle(mapError(w.f.Get()))
	}()
	return w
}

// watch is a kv.Watch over a FoundationDB watch future.
type watch struct {
	f    fdb.FutureNil // nil when the watch failed before reaching FoundationDB
	done chan struct{}
	mu   sync.Mutex // guards err
	err  error
}

func (w *watch) settle(err error) {
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
	close(w.done)
}

func (w *watch) Done() <-chan struct{} { return w.done }

func (w *watch) Cancel() {
	if w.f != nil {
		w.f.Cancel()
	}
}

func (w *watch) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *watch) Wait(ctx context.Context) error { return kv.WaitWatch(ctx, w.done, w.Err) }
