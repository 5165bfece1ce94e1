package ui_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/ui"
)

// Hostile names and values: backquoted identifiers take almost anything,
// and the page must show them as text, never as markup.
const (
	evilTable  = `<img src=x onerror=window.pwned=1>`
	evilColumn = `"><svg onload=window.pwned=2>`
	evilValue  = `<img src=x onerror=window.pwned=3>`
	evilError  = `<script>window.pwned=4</script>`
	tickColumn = "a`b" // a backtick, doubled when quoted
	pathTable  = "a/b?c#d%e f"
)

// quoted is name as the dialect's statements quote it.
func quoted(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

func TestHostileNamesShowAsText(t *testing.T) {
	b := browser(t)
	db := open(t, "memory:")
	for _, stmt := range []string{
		fmt.Sprintf("CREATE TABLE %s (%s TEXT, %s INT) MAX_ATTEMPTS=1", quoted(evilTable), quoted(evilColumn), quoted(tickColumn)),
		fmt.Sprintf("CREATE TABLE %s (v TEXT)", quoted(pathTable)),
		fmt.Sprintf("INSERT INTO %s (%s, %s, _attempts, _error) VALUES ('dead one', 1, 1, '%s')", quoted(evilTable), quoted(evilColumn), quoted(tickColumn), evilError),
		fmt.Sprintf("INSERT INTO %s (%s, %s) VALUES ('%s', 2)", quoted(evilTable), quoted(evilColumn), quoted(tickColumn), evilValue),
		fmt.Sprintf("INSERT INTO %s (v) VALUES ('%s')", quoted(pathTable), evilValue),
	} {
		_, err := db.Exec(stmt)
		require.NoError(t, err, stmt)
	}
	// Leased once already, at MAX_ATTEMPTS=1: this lease makes the first
	// row a dead letter, and leases the second.
	_, err := db.Exec(fmt.Sprintf("SELECT id FROM %s LIMIT 1 FOR LEASE 60", quoted(evilTable)))
	require.NoError(t, err)
	var deadID, liveID int64
	require.NoError(t, db.QueryRow(fmt.Sprintf("SELECT id FROM %s", quoted(evilTable+"_dead"))).Scan(&deadID))
	require.NoError(t, db.QueryRow(fmt.Sprintf("SELECT id FROM %s", quoted(evilTable))).Scan(&liveID))

	srv := serve(t, ui.Handler(db, ui.WithInterval(100*time.Millisecond)))
	base := srv.URL + "/queues/"
	tb := newTab(t, b)
	// No markup from the data: no element it would have made, and no
	// script it would have run (nor a CSP report, which newTab's console
	// check fails on).
	noMarkup := func() {
		t.Helper()
		require.Zero(t, tb.count(t, `main img, main svg[onload], main script, [onerror], [onload]`), "markup from the data")
		pwned, err := chromedp.Run(tb.ctx, chromedp.Evaluate[bool](`window.pwned !== undefined`))
		require.NoError(t, err)
		require.False(t, pwned, "a script from the data ran")
	}
	cellTexts := func(sel string) []string {
		t.Helper()
		tb.do(t, visible(sel))
		s, err := chromedp.Run(tb.ctx, chromedp.Evaluate[[]string](fmt.Sprintf(`[...document.querySelectorAll(%q)].map((e) => e.innerText)`, sel)))
		require.NoError(t, err)
		return s
	}

	tb.do(t, chromedp.Navigate(base), visible(`#tables tbody tr`))
	require.ElementsMatch(t, []string{evilTable, pathTable}, cellTexts(`#tables tbody td:first-child`))
	noMarkup()

	// Its page, by its link: the name, the columns and the values as
	// text.
	tb.do(t, click(`#tables tbody tr[data-table^="<img"] a`), visible(`#row-table[data-state="visible"]`),
		click(`a[data-state="leased"]`), visible(`#row-table[data-state="leased"] tbody tr`))
	require.Equal(t, evilTable+" fifo · MAX_ATTEMPTS=1", tb.text(t, `main h1`))
	require.Contains(t, tb.text(t, `#crumbs`), evilTable)
	require.Contains(t, cellTexts(`#row-table th`), evilColumn)
	require.Contains(t, cellTexts(`#row-table th`), tickColumn)
	require.Contains(t, cellTexts(`#row-table td`), evilValue)
	noMarkup()
	// The confirmation shows the statement the action runs, names quoted.
	tb.do(t, click(fmt.Sprintf(`tr[data-id="%d"] button[data-action="delete"]`, liveID)), visible(`#confirm`))
	require.Equal(t, fmt.Sprintf("DELETE FROM %s WHERE id = %d", quoted(evilTable), liveID), tb.text(t, `#confirm-sql`))
	tb.do(t, click(`#confirm-cancel`), chromedp.WaitNotVisible(chromedp.CSS(`#confirm`)))

	// Its dead letters: the error as text, and retry's statement.
	tb.do(t, click(`a[data-state="dead"]`), visible(fmt.Sprintf(`#row-table[data-state="dead"] tr[data-id="%d"]`, deadID)))
	require.Contains(t, cellTexts(`#row-table td`), evilError)
	noMarkup()
	tb.do(t, click(fmt.Sprintf(`tr[data-id="%d"] button[data-action="retry"]`, deadID)), visible(`#confirm`))
	require.Equal(t, fmt.Sprintf("INSERT INTO %s SELECT * FROM %s WHERE id = %d LIMIT 1 FOR POP", quoted(evilTable), quoted(evilTable+"_dead"), deadID), tb.text(t, `#confirm-sql`))
	tb.do(t, click(`#confirm-ok`))
	require.Contains(t, tb.text(t, `#status div`), "is back in "+evilTable)
	tb.do(t, gone(fmt.Sprintf(`tr[data-id="%d"]`, deadID)))
	tb.screenshot(t, "hostile-dead.png")
	noMarkup()

	// A name with a URL's delimiters (/ ? # % and a space) reaches its
	// own page and rows.
	tb.do(t, chromedp.Navigate(base+"#/"), visible(`#tables tbody tr`),
		click(`#tables tbody tr[data-table^="a/b"] a`), visible(`#row-table[data-state="visible"] tbody tr`))
	require.Equal(t, pathTable+" fifo", tb.text(t, `main h1`))
	require.Contains(t, cellTexts(`#row-table td`), evilValue)
	hash, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`location.hash`))
	require.NoError(t, err)
	require.Equal(t, "#/t/"+url.PathEscape(pathTable)+"/visible", hash)
	noMarkup()

	// Dropped while its page is open: the refresh says so.
	_, err = db.Exec("DROP TABLE " + quoted(pathTable))
	require.NoError(t, err)
	_, err = chromedp.Run(tb.ctx, chromedp.Poll[bool](`document.getElementById("live").innerText.includes("was it dropped?")`))
	require.NoError(t, err, "the page did not say the table is gone: %s", tb.text(t, "#live"))
	tb.screenshot(t, "dropped.png")
	tb.expectErrors(t, "status of 404")

	// A long name and a long value stay inside the window: no page
	// wider than it.
	long := strings.Repeat("long_name_", 25) // 250 bytes: a name is at most 255
	_, err = db.Exec(fmt.Sprintf("CREATE TABLE %s (%s TEXT)", long, long))
	require.NoError(t, err)
	_, err = db.Exec(fmt.Sprintf("INSERT INTO %s (%s) VALUES (?)", long, long), strings.Repeat("x", 2000))
	require.NoError(t, err)
	noScroll := func(what string) {
		t.Helper()
		w, err := chromedp.Run(tb.ctx, chromedp.Evaluate[[]int](`[document.documentElement.scrollWidth, window.innerWidth]`))
		require.NoError(t, err)
		require.LessOrEqual(t, w[0], w[1], "%s: the page is wider than the window", what)
	}
	tb.do(t, chromedp.Navigate(base+"#/"), visible(fmt.Sprintf(`#tables tr[data-table=%q]`, long)))
	tb.screenshot(t, "long-overview.png")
	noScroll("the overview")
	tb.do(t, chromedp.Navigate(base+"#/t/"+long+"/visible"), visible(`#row-table tbody tr`))
	tb.screenshot(t, "long-table.png")
	noScroll("the table's page")

	// An address that is not one of the page's says so, readably.
	tb.do(t, chromedp.Navigate(base+"#/t/%E0%A4/visible"), visible(`#error`))
	require.Contains(t, tb.text(t, `#error`), "this address is not one of the dashboard's")
	tb.do(t, click(`main a[href="#/"]`), visible(`#tables`))
}
