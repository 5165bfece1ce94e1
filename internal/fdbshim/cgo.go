//go:build fdb

package fdbshim

// #cgo LDFLAGS: -ldl
// #include <stdlib.h>
// #include "futures.h"
import "C"

import (
	"encoding/binary"
	"fmt"
	"runtime/cgo"
	"sync/atomic"
	"unsafe"

	"github.com/fdbqueue/fdbqueue/kv"
)

// registered is true once the program's libfdb_c turned out to be the test
// double and took this package's table.
var registered atomic.Bool

func init() {
	registered.Store(C.shim_register() == 1)
}

// Available reports whether the program's libfdb_c is this package's test
// double (built by build.sh), rather than FoundationDB's client library.
func Available() bool { return registered.Load() }

// Handles: the C API's FDBDatabase*, FDBTenant* and FDBTransaction* are
// pointers to a word of C memory holding a cgo.Handle. A destroyed database
// or tenant keeps its word (set to 0) for ever, so that a second destroy, or
// a use after destroy, is reported rather than reading freed memory.

func newHandle(v any) unsafe.Pointer {
	p := C.malloc(C.size_t(unsafe.Sizeof(uintptr(0))))
	*(*uintptr)(p) = uintptr(cgo.NewHandle(v))
	return p
}

// handleValue returns the object behind p, or nil once it was destroyed.
func handleValue(p unsafe.Pointer) any {
	h := atomic.LoadUintptr((*uintptr)(p))
	if h == 0 {
		return nil
	}
	return cgo.Handle(h).Value()
}

// tombstone marks p destroyed and reports whether it was live.
func tombstone(p unsafe.Pointer) bool {
	h := atomic.SwapUintptr((*uintptr)(p), 0)
	if h == 0 {
		return false
	}
	cgo.Handle(h).Delete()
	return true
}

// release deletes the handle and frees p (transactions: the bindings
// destroy each exactly once).
func release(p unsafe.Pointer) {
	if tombstone(p) {
		C.free(p)
	}
}

// future is the Go side's hold on a C future: it completes it at most once
// and then drops its reference (done), exactly once.
type future struct {
	c *C.shim_future
	// issued is when the attempt issued it, by its clock (waits.go).
	issued int64
}

const (
	kindVoid      = C.SHIM_VOID
	kindInt64     = C.SHIM_INT64
	kindKey       = C.SHIM_KEY
	kindValue     = C.SHIM_VALUE
	kindKeyValues = C.SHIM_KEYVALUES
	kindKeys      = C.SHIM_KEYS
	kindStrings   = C.SHIM_STRINGS
)

func newFuture(kind C.int) *future { return &future{c: C.shim_future_new(kind)} }

func (f *future) ptr() unsafe.Pointer { return unsafe.Pointer(f.c) }

// ref takes an extra reference, for a completer other than the producer.
func (f *future) ref() {
	C.shim_future_ref(f.c)
}

func (f *future) done() { C.shim_future_done(f.c) }

func (f *future) isReady() bool { return C.shim_future_ready(f.c) != 0 }

func (f *future) fail(code int) bool {
	if code == 0 {
		panic("fdbshim: failing a future with code 0")
	}
	return C.shim_future_complete(f.c, C.int(code), 0, 0, nil, 0, 0, 0) == 1
}

func (f *future) succeed() bool { return C.shim_future_complete(f.c, 0, 0, 0, nil, 0, 0, 0) == 1 }

func (f *future) int64(v int64) bool {
	return C.shim_future_complete(f.c, 0, C.int64_t(v), 0, nil, 0, 0, 0) == 1
}

// bytes completes a value or key future; present false is an absent value.
func (f *future) bytes(b []byte, present bool) bool {
	var p unsafe.Pointer
	if len(b) > 0 {
		p = C.CBytes(b)
	}
	pr := C.int(0)
	if present {
		pr = 1
	}
	return C.shim_future_complete(f.c, 0, 0, pr, p, C.int(len(b)), 0, 0) == 1
}

// keyValues completes a range read with FDBKeyValue entries: 24 bytes each
// under pack(4), key pointer at 0, key length at 8, value pointer at 12,
// value length at 20 (native byte order; the test double runs on
// little-endian machines only).
func (f *future) keyValues(rows []kv.KeyValue, more bool) bool {
	const entry = 24
	size := entry * len(rows)
	for _, r := range rows {
		size += len(r.Key) + len(r.Value)
	}
	p := C.malloc(C.size_t(max(size, 1)))
	buf := unsafe.Slice((*byte)(p), size)
	off := entry * len(rows)
	for i, r := range rows {
		e := buf[entry*i:]
		binary.LittleEndian.PutUint64(e[0:], uint64(uintptr(p)+uintptr(off)))
		binary.LittleEndian.PutUint32(e[8:], uint32(len(r.Key)))
		off += copy(buf[off:], r.Key)
		binary.LittleEndian.PutUint64(e[12:], uint64(uintptr(p)+uintptr(off)))
		binary.LittleEndian.PutUint32(e[20:], uint32(len(r.Value)))
		off += copy(buf[off:], r.Value)
	}
	m := C.int(0)
	if more {
		m = 1
	}
	return C.shim_future_complete(f.c, 0, 0, 0, p, C.int(size), C.int(len(rows)), m) == 1
}

// keys completes a key array: FDBKey entries of 12 bytes (pointer, length).
func (f *future) keys(keys [][]byte) bool {
	const entry = 12
	size := entry * len(keys)
	for _, k := range keys {
		size += len(k)
	}
	p := C.malloc(C.size_t(max(size, 1)))
	buf := unsafe.Slice((*byte)(p), size)
	off := entry * len(keys)
	for i, k := range keys {
		binary.LittleEndian.PutUint64(buf[entry*i:], uint64(uintptr(p)+uintptr(off)))
		binary.LittleEndian.PutUint32(buf[entry*i+8:], uint32(len(k)))
		off += copy(buf[off:], k)
	}
	return C.shim_future_complete(f.c, 0, 0, 0, p, C.int(size), C.int(len(keys)), 0) == 1
}

// strings completes a string array: char* pointers, then the NUL-terminated
// strings.
func (f *future) strings(ss []string) bool {
	size := 8 * len(ss)
	for _, s := range ss {
		size += len(s) + 1
	}
	p := C.malloc(C.size_t(max(size, 1)))
	buf := unsafe.Slice((*byte)(p), size)
	off := 8 * len(ss)
	for i, s := range ss {
		binary.LittleEndian.PutUint64(buf[8*i:], uint64(uintptr(p)+uintptr(off)))
		off += copy(buf[off:], s)
		buf[off] = 0
		off++
	}
	return C.shim_future_complete(f.c, 0, 0, 0, p, C.int(size), C.int(len(ss)), 0) == 1
}

// failed returns a future already failed with code, for the C API's
// functions that return one.
func failed(kind C.int, code int) unsafe.Pointer {
	f := newFuture(kind)
	f.fail(code)
	f.done()
	return f.ptr()
}

// goBytes copies n bytes at p (nil for a NULL pointer).
func goBytes(p *C.uint8_t, n C.int) []byte {
	if p == nil || n <= 0 {
		return []byte{}
	}
	return C.GoBytes(unsafe.Pointer(p), n)
}

// misuse reports a use of the C API that would crash or corrupt memory in
// the real client library. The test binary dies, as it would there.
func misuse(format string, args ...any) {
	panic(fmt.Sprintf("fdbshim: "+format+" (in the real libfdb_c: undefined behaviour, a use after free)", args...))
}
