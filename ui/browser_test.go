package ui_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/ui"
)

// chromium returns the browser's path, or skips the test where none is
// installed, unless CI=true, where a missing browser fails it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("FDBQUEUE_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed, and CI=true: run scripts/install-chromium.sh (apt-get install chromium) before the tests")
	}
	t.Skip("chromium is not installed: the dashboard's browser tests need it (scripts/install-chromium.sh installs it; under CI=true they fail instead of skipping)")
	return ""
}

// browser starts one headless Chromium for the test's subtests, with the
// flags that keep it from reaching for the network.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	require.NoError(t, chromedp.Do(bctx), "starting chromium")
	return bctx
}

// tab is a browser tab that records the page's console errors and
// uncaught exceptions, and fails the test that opened it if any.
type tab struct {
	ctx    context.Context
	mu     sync.Mutex
	errors []string
}

func newTab(t *testing.T, b context.Context) *tab {
	t.Helper()
	tb := &tab{}
	ctx, cancel := chromedp.NewContext(b, chromedp.WithListener(tb.listen))
	t.Cleanup(cancel)
	require.NoError(t, chromedp.Do(ctx), "opening a tab")
	// Generous: under the race detector and a loaded machine, the page
	// and the browser are slow.
	tb.ctx, cancel = context.WithTimeout(ctx, time.Minute)
	t.Cleanup(cancel)
	t.Cleanup(func() {
		if t.Failed() {
			// What the page showed when the test failed, for review.
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100)); err == nil {
				dir := screenshotDir(t)
				_ = os.WriteFile(filepath.Join(dir, "failed-"+strings.ReplaceAll(t.Name(), "/", "-")+".png"), png, 0o644)
				t.Logf("the page when the test failed: %s", dir)
			}
		}
		tb.mu.Lock()
		defer tb.mu.Unlock()
		require.Empty(t, tb.errors, "the page logged errors")
	})
	return tb
}

func (tb *tab) listen(ev any) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			tb.errors = append(tb.errors, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		tb.errors = append(tb.errors, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, msg))
	case *cdplog.EventEntryAdded:
		if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning {
			tb.errors = append(tb.errors, fmt.Sprintf("log %s: %s (%s)", ev.Entry.Level, ev.Entry.Text, ev.Entry.URL))
		}
	}
}

// expectErrors takes the errors the page logged that hold substr out of
// those that fail the test (a 404 the page expected and showed, say),
// and requires one at least.
func (tb *tab) expectErrors(t *testing.T, substr string) {
	t.Helper()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var keep []string
	for _, e := range tb.errors {
		if !strings.Contains(e, substr) {
			keep = append(keep, e)
		}
	}
	require.Less(t, len(keep), len(tb.errors), "the page logged no error with %q", substr)
	tb.errors = keep
}

func (tb *tab) do(t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	require.NoError(t, chromedp.Do(tb.ctx, steps...))
}

// visible waits for the element sel names to be visible.
func visible(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(sel))
}

func click(sel string) chromedp.Action[chromedp.Void] { return chromedp.Click(chromedp.CSS(sel)) }

func gone(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitNotPresent(chromedp.CSS(sel))
}

// text returns the text of the element sel names, once visible. It reads
// it in one evaluation: the page may replace the element meanwhile (the
// table page redraws its counts every 2 s).
func (tb *tab) text(t *testing.T, sel string) string {
	t.Helper()
	tb.do(t, visible(sel))
	s, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](fmt.Sprintf("document.querySelector(%q).innerText", sel)))
	require.NoError(t, err)
	return strings.TrimSpace(s)
}

// count returns how many elements sel names.
func (tb *tab) count(t *testing.T, sel string) int {
	t.Helper()
	n, err := chromedp.Run(tb.ctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
	require.NoError(t, err)
	return n
}

// screenshot writes the page to name in $FDBQUEUE_SCREENSHOTS (or the
// test's temporary directory), for review.
func (tb *tab) screenshot(t *testing.T, name string) {
	t.Helper()
	dir := screenshotDir(t)
	png, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), png, 0o644))
	t.Logf("screenshot: %s", filepath.Join(dir, name))
}

// screenshotDir is $FDBQUEUE_SCREENSHOTS, or the test's temporary
// directory.
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("FDBQUEUE_SCREENSHOTS")
	if dir == "" {
		return t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// sqlInt reads one integer.
func sqlInt(t *testing.T, db *sql.DB, query string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, db.QueryRow(query, args...).Scan(&n), query)
	return n
}

// TestBrowser drives the dashboard in headless Chromium: its pages load
// without console errors, show the numbers SQL reads, and an action
// clicked and confirmed in the page changes the database.
func TestBrowser(t *testing.T) {
	b := browser(t)
	db := open(t, "memory:")
	s := seed(t, db)
	// Some traffic for the plots: pushes and pops over a few samples.
	srv := serve(t, ui.Handler(db, ui.WithInterval(100*time.Millisecond)))
	for i := range 5 {
		_, err := db.Exec(`INSERT INTO emails (recipient) VALUES (?), (?)`, fmt.Sprint("x", i), fmt.Sprint("y", i))
		require.NoError(t, err)
		_, err = db.Exec(`SELECT recipient FROM emails LIMIT 1 FOR POP`)
		require.NoError(t, err)
		time.Sleep(120 * time.Millisecond)
	}
	base := srv.URL + "/queues/"

	t.Run("overview", func(t *testing.T) {
		tb := newTab(t, b)
		tb.do(t, chromedp.Navigate(base), visible(`#tables tr[data-table="jobs"]`),
			visible(`.chart svg path`))
		for _, table := range []string{"jobs", "emails"} {
			var visible, delayed, leased, rows int64
			var dead sql.NullInt64
			require.NoError(t, db.QueryRow(`SELECT rows, visible, delayed, leased, dead FROM fdbqueue_queues WHERE name = ?`, table).
				Scan(&rows, &visible, &delayed, &leased, &dead))
			cell := func(f string) string {
				return tb.text(t, fmt.Sprintf(`#tables tr[data-table=%q] td[data-field=%q]`, table, f))
			}
			require.Equal(t, strconv.FormatInt(rows, 10), cell("rows"), table)
			require.Equal(t, strconv.FormatInt(visible, 10), cell("visible"), table)
			require.Equal(t, strconv.FormatInt(delayed, 10), cell("delayed"), table)
			require.Equal(t, strconv.FormatInt(leased, 10), cell("leased"), table)
			if dead.Valid {
				require.Equal(t, strconv.FormatInt(dead.Int64, 10), cell("dead"), table)
			} else {
				require.Equal(t, "–", cell("dead"), table)
			}
		}
		require.Zero(t, tb.count(t, `#tables tr[data-table="jobs_dead"]`), "a dead-letter table shows in its table's row")
		require.Equal(t, 3, tb.count(t, `.chart`))
		tb.screenshot(t, "overview.png")
	})

	t.Run("rows", func(t *testing.T) {
		tb := newTab(t, b)
		for _, st := range []struct{ state, where string }{
			{"visible", `SELECT COUNT(*) FROM jobs WHERE _visible_at <= NOW()`},
			{"delayed", `SELECT COUNT(*) FROM jobs WHERE _visible_at > NOW() AND _lease = 0`},
			{"leased", `SELECT COUNT(*) FROM jobs WHERE _visible_at > NOW() AND _lease != 0`},
			{"dead", `SELECT COUNT(*) FROM jobs_dead`},
		} {
			tb.do(t, chromedp.Navigate(base+"#/t/jobs/"+st.state),
				visible(fmt.Sprintf(`#row-table[data-state=%q]`, st.state)))
			n := sqlInt(t, db, st.where)
			require.EqualValues(t, n, tb.count(t, `#row-table tbody tr`), st.state)
			require.Equal(t, strconv.FormatInt(n, 10), tb.text(t, fmt.Sprintf(`.card[data-count=%q] b`, st.state)), st.state)
			tb.screenshot(t, "table-"+st.state+".png")
		}
		// The leased row shows its lease and attempts.
		tb.do(t, chromedp.Navigate(base+"#/t/jobs/leased"), visible(`#row-table[data-state="leased"]`))
		require.Equal(t, strconv.FormatInt(s.lease, 10), tb.text(t, fmt.Sprintf(`tr[data-id="%d"] td:nth-child(3)`, s.leasedID)))
		require.Equal(t, "1", tb.text(t, fmt.Sprintf(`tr[data-id="%d"] td:nth-child(4)`, s.leasedID)))
		// Find by id.
		tb.do(t, chromedp.SetValue(chromedp.CSS(`#find-id`), strconv.FormatInt(s.deadID, 10)), click(`#find`),
			visible(`#row-table[data-state="dead"]`))
		require.Equal(t, 1, tb.count(t, fmt.Sprintf(`tr[data-id="%d"]`, s.deadID)))
		// The counts follow the database without a click.
		before := tb.text(t, `.card[data-count="visible"] b`)
		_, err := db.Exec(`INSERT INTO jobs (priority, payload) VALUES (9, 'new')`)
		require.NoError(t, err)
		now := strconv.FormatInt(sqlInt(t, db, `SELECT visible FROM fdbqueue_queues WHERE name = 'jobs'`), 10)
		require.NotEqual(t, before, now)
		_, err = chromedp.Run(tb.ctx, chromedp.Poll[bool](fmt.Sprintf(
			`document.querySelector('.card[data-count="visible"] b').innerText === %q`, now)))
		require.NoError(t, err, "the visible count did not become %s", now)
		_, err = db.Exec(`DELETE FROM jobs WHERE payload = 'new'`)
		require.NoError(t, err)
	})

	t.Run("actions", func(t *testing.T) {
		tb := newTab(t, b)
		// Cancel leaves the row.
		tb.do(t, chromedp.Navigate(base+"#/t/jobs/dead"), visible(fmt.Sprintf(`tr[data-id="%d"] button[data-action="retry"]`, s.deadID)),
			click(fmt.Sprintf(`tr[data-id="%d"] button[data-action="delete"]`, s.deadID)),
			visible(`#confirm`))
		tb.screenshot(t, "confirm.png")
		tb.do(t, click(`#confirm-cancel`), chromedp.WaitNotVisible(chromedp.CSS(`#confirm`)))
		require.EqualValues(t, 1, sqlInt(t, db, `SELECT COUNT(*) FROM jobs_dead`))

		// Retry, confirmed: the dead letter is back in jobs.
		tb.do(t, click(fmt.Sprintf(`tr[data-id="%d"] button[data-action="retry"]`, s.deadID)),
			visible(`#confirm`), click(`#confirm-ok`))
		require.Contains(t, tb.text(t, `#status div`), "is back in jobs") // shown for 10 s
		tb.do(t, gone(fmt.Sprintf(`tr[data-id="%d"]`, s.deadID)))
		require.EqualValues(t, 0, sqlInt(t, db, `SELECT COUNT(*) FROM jobs_dead`))
		require.EqualValues(t, 1, sqlInt(t, db, `SELECT COUNT(*) FROM jobs WHERE payload = 'doomed' AND _attempts = 0`))

		// Release, confirmed: the leased row is visible.
		tb.do(t, chromedp.Navigate(base+"#/t/jobs/leased"),
			click(fmt.Sprintf(`tr[data-id="%d"] button[data-action="release"]`, s.leasedID)),
			visible(`#confirm`), click(`#confirm-ok`),
			gone(fmt.Sprintf(`tr[data-id="%d"]`, s.leasedID)))
		require.EqualValues(t, 1, sqlInt(t, db, `SELECT COUNT(*) FROM jobs WHERE id = ? AND _visible_at <= NOW()`, s.leasedID))
		require.EqualValues(t, 0, sqlInt(t, db, `SELECT leased FROM fdbqueue_queues WHERE name = 'jobs'`))
	})

	t.Run("no tables", func(t *testing.T) {
		empty := serve(t, ui.Handler(open(t, "memory:"), ui.WithInterval(100*time.Millisecond)))
		tb := newTab(t, b)
		tb.do(t, chromedp.Navigate(empty.URL+"/queues/"), visible(`main p.muted`))
		require.Contains(t, tb.text(t, `main p.muted`), "No tables yet. CREATE TABLE makes one")
		require.Zero(t, tb.count(t, `.chart`), "no empty plots")
		require.NotContains(t, tb.text(t, `main`), "null")
		tb.screenshot(t, "empty.png")
	})

	t.Run("overview recovers", func(t *testing.T) {
		// The overview fails (503, as when the database is slow) until
		// failing is cleared: the page shows the error, then the tables
		// once it answers again, without a reload.
		var failing atomic.Bool
		failing.Store(true)
		d := ui.Handler(db)
		t.Cleanup(func() { d.Close() })
		flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if failing.Load() && r.URL.Path == "/api/overview" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"error": "reading fdbqueue_queues took longer than the dashboard's query timeout"}`))
				return
			}
			d.ServeHTTP(w, r)
		}))
		t.Cleanup(flaky.Close)
		tb := newTab(t, b)
		tb.do(t, chromedp.Navigate(flaky.URL+"/"), visible(`#error`))
		require.Contains(t, tb.text(t, `#error`), "query timeout")
		failing.Store(false)
		tb.do(t, visible(`#tables tr[data-table="jobs"]`))
		tb.expectErrors(t, "status of 503")
	})

	t.Run("read-only", func(t *testing.T) {
		ro := serve(t, ui.Handler(db, ui.ReadOnly()))
		tb := newTab(t, b)
		tb.do(t, chromedp.Navigate(ro.URL+"/queues/#/t/jobs/visible"), visible(`#row-table tbody tr`))
		require.Equal(t, "read-only", tb.text(t, `#mode`))
		require.Zero(t, tb.count(t, `button[data-action]`))
		require.Zero(t, tb.count(t, `#purge`))
	})
}
