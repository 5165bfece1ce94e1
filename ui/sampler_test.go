package ui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/driver"
	"github.com/fdbqueue/fdbqueue/metrics"
	"github.com/fdbqueue/fdbqueue/ui"
)

// TestCloseStopsSampling: the handler samples fdbqueue_queues every
// interval, keeps at most its history, and after Close runs no statement
// and leaves no goroutine.
func TestCloseStopsSampling(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:")
	seed(t, db)
	var mu sync.Mutex
	stats := 0
	stop, err := driver.Observe(context.Background(), db, func(s driver.Statement) {
		if s.Kind == "stats" {
			mu.Lock()
			stats++
			mu.Unlock()
		}
	})
	require.NoError(t, err)
	defer stop()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return stats
	}
	d := ui.Handler(db, ui.WithInterval(100*time.Millisecond), ui.WithHistory(5))
	require.Eventually(t, func() bool { return count() >= 8 }, 10*time.Second, 10*time.Millisecond)
	srv := httptest.NewServer(d)
	defer srv.Close()
	res, err := http.Get(srv.URL + "/api/overview")
	require.NoError(t, err)
	var o struct {
		Series struct {
			T []int64 `json:"t"`
		} `json:"series"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&o))
	res.Body.Close()
	require.Len(t, o.Series.T, 5, "the history holds 5 samples")
	for i := 1; i < len(o.Series.T); i++ {
		require.Less(t, o.Series.T[i-1], o.Series.T[i], "oldest first")
	}

	closed := make(chan struct{})
	go func() {
		require.NoError(t, d.Close())
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return: the sampling goroutine did not end")
	}
	require.NoError(t, d.Close(), "Close twice")
	after := count() - 1 // the overview read one
	time.Sleep(500 * time.Millisecond)
	require.Equal(t, after, count()-1, "statements after Close")
}

// samplers counts the goroutines startSampler started that still run:
// those created by it (a goroutine not yet run has no frame of the
// sampler's own).
func samplers() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return strings.Count(string(buf), "created by github.com/fdbqueue/fdbqueue/ui.startSampler ")
}

// TestCloseLeavesNoGoroutine counts the process's goroutines around a
// handler's life: back to the count before it once Close returns. Not
// parallel, so no other test starts goroutines meanwhile; goroutines of
// earlier tests may still end, so that the sampler's start is seen in
// the stacks, not in the count.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	db := open(t, "memory:")
	seed(t, db)
	_, err := metrics.Read(context.Background(), db) // the pool's and the driver's goroutines start
	require.NoError(t, err)
	before := runtime.NumGoroutine()
	for range 3 {
		d := ui.Handler(db, ui.WithInterval(100*time.Millisecond))
		rec := httptest.NewRecorder()
		d.ServeHTTP(rec, httptest.NewRequest("GET", "/api/overview", nil))
		require.Equal(t, http.StatusOK, rec.Code)
		require.GreaterOrEqual(t, samplers(), 1, "the sampler runs") // the last one's may be ending
		require.NoError(t, d.Close())
	}
	// Polled here, not with require.Eventually, whose condition runs on
	// a goroutine of its own.
	for deadline := time.Now().Add(5 * time.Second); (runtime.NumGoroutine() > before || samplers() > 0) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	require.Zero(t, samplers(), "a sampler runs after Close")
	if n := runtime.NumGoroutine(); n > before {
		var stacks strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
		t.Fatalf("goroutines: %d before, %d after Close:\n%s", before, n, stacks.String())
	}
}

// TestOddOptions: a history past MaxHistory is MaxHistory, taken as
// samples come (not made up front), and a query timeout of 0 or less is
// the default, not one every statement runs out of.
func TestOddOptions(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:")
	seed(t, db)
	d := ui.Handler(db, ui.WithHistory(1<<62), ui.WithQueryTimeout(0), ui.WithInterval(100*time.Millisecond))
	t.Cleanup(func() { d.Close() })
	var n int
	require.Eventually(t, func() bool {
		rec := httptest.NewRecorder()
		d.ServeHTTP(rec, httptest.NewRequest("GET", "/api/overview", nil))
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		var o struct {
			Series struct {
				T []int64 `json:"t"`
			} `json:"series"`
		}
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &o))
		n = len(o.Series.T)
		return n >= 3
	}, 10*time.Second, 20*time.Millisecond)
	rec := httptest.NewRecorder()
	d.ServeHTTP(rec, httptest.NewRequest("GET", "/api/tables/jobs/rows?state=leased", nil))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
}
