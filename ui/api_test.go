package ui_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
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

// client calls a dashboard's API as its page does.
type client struct {
	srv   *httptest.Server
	token string
}

var tokenMeta = regexp.MustCompile(`name="fdbqueue-token" content="([0-9a-f]+)"`)

func newClient(t *testing.T, d *ui.Dashboard) *client {
	t.Helper()
	srv := serve(t, d)
	res, err := http.Get(srv.URL + "/queues/")
	require.NoError(t, err)
	defer res.Body.Close()
	page, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	m := tokenMeta.FindSubmatch(page)
	require.NotNil(t, m, "the page holds its token")
	return &client{srv: srv, token: string(m[1])}
}

// response is a status and a decoded JSON body.
type response struct {
	status int
	body   map[string]any
	header http.Header
}

func (c *client) do(t *testing.T, method, path, body string, header map[string]string) response {
	t.Helper()
	r, err := c.try(method, path, body, header)
	require.NoError(t, err)
	return r
}

// try is do for another goroutine than the test's: it returns what
// failed.
func (c *client) try(method, path, body string, header map[string]string) (response, error) {
	req, err := http.NewRequest(method, c.srv.URL+"/queues/"+path, strings.NewReader(body))
	if err != nil {
		return response{}, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return response{}, err
	}
	var m map[string]any
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &m); err != nil {
			return response{}, fmt.Errorf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	return response{status: res.StatusCode, body: m, header: res.Header}, nil
}

func (c *client) get(t *testing.T, path string) response { return c.do(t, "GET", path, "", nil) }

// act posts an action as the page does: same origin, with the token.
func (c *client) act(t *testing.T, table, action, body string) response {
	t.Helper()
	r, err := c.tryAct(table, action, body)
	require.NoError(t, err)
	return r
}

func (c *client) tryAct(table, action, body string) (response, error) {
	return c.try("POST", "api/tables/"+table+"/actions/"+action, body, map[string]string{
		"Content-Type": "application/json", "X-Fdbqueue-Token": c.token, "Sec-Fetch-Site": "same-origin",
	})
}

// tally counts the statuses of concurrent actions, and their errors.
type tally struct {
	mu       sync.Mutex
	statuses map[int]int
	bodies   []map[string]any
	errs     []error
}

func (ta *tally) add(r response, err error) {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	if err != nil {
		ta.errs = append(ta.errs, err)
		return
	}
	if ta.statuses == nil {
		ta.statuses = map[int]int{}
	}
	ta.statuses[r.status]++
	ta.bodies = append(ta.bodies, r.body)
}

func TestBadInputGetsAClearError(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:")
	s := seed(t, db)
	c := newClient(t, ui.Handler(db))
	for _, tc := range []struct {
		method, path, body string
		status             int
		says               string
	}{
		{"GET", "api/tables/nope/rows", "", 404, `no table "nope": the tables are emails, jobs, jobs_dead`},
		{"GET", "api/tables/nope", "", 404, `no table "nope"`},
		{"GET", "api/tables/" + strings.Repeat("x", 5000) + "/rows", "", 404, "no table"},
		{"GET", "api/tables/jobs/rows?limit=100000", "", 400, "limit \"100000\" is not a number from 1 to 500"},
		{"GET", "api/tables/jobs/rows?limit=0", "", 400, "from 1 to 500"},
		{"GET", "api/tables/jobs/rows?limit=1e3", "", 400, "from 1 to 500"},
		{"GET", "api/tables/jobs/rows?offset=-1", "", 400, "offset \"-1\""},
		{"GET", "api/tables/jobs/rows?offset=990&limit=50", "", 400, "1000 rows deep; find a deeper row by its id"},
		{"GET", "api/tables/jobs/rows?state=running", "", 400, `no state "running"; accepted: state (visible, delayed, leased or dead)`},
		{"GET", "api/tables/jobs/rows?sort=id", "", 400, `unknown parameter "sort"`},
		{"GET", "api/tables/jobs/rows?limit=1&limit=2", "", 400, "limit given 2 times"},
		{"GET", "api/tables/jobs/rows?id=abc", "", 400, `id "abc" is not a row's id`},
		{"GET", "api/tables/jobs/rows?id=-5", "", 400, "is not a row's id"},
		{"GET", "api/tables/jobs/rows?id=99999999999999999999", "", 400, "is not a row's id"},
		{"GET", "api/tables/jobs/rows?id=1%27%20OR%201=1", "", 400, "is not a row's id"},
		{"GET", "api/tables/jobs/rows?id=12345", "", 404, "table jobs has no row with id 12345 (nor has jobs_dead)"},
		{"GET", "api/tables/emails/rows?state=dead", "", 400, "emails has no dead letters"},
		{"POST", "api/overview", "", 405, "takes GET only"},
		{"DELETE", "api/tables/jobs/rows", "", 405, "takes GET only"},
		{"GET", "api/tables/jobs/actions/retry", "", 405, "takes POST only"},
		{"GET", "api/nothing", "", 404, "the API serves GET api/overview"},
	} {
		r := c.do(t, tc.method, tc.path, tc.body, nil)
		require.Equal(t, tc.status, r.status, "%s %s: %v", tc.method, tc.path, r.body)
		require.Contains(t, r.body["error"], tc.says, "%s %s", tc.method, tc.path)
	}
	require.Equal(t, "POST", c.get(t, "api/tables/jobs/actions/retry").header.Get("Allow"))

	// Actions, with the token: bad bodies are refused before any
	// statement runs.
	for _, tc := range []struct {
		table, action, body string
		status              int
		says                string
	}{
		{"jobs", "explode", `{}`, 404, `no action "explode": the actions are retry, delete, release and purge`},
		{"nope", "delete", `{"id": "1"}`, 404, `no table "nope"`},
		{"jobs", "delete", `{"id": 1}`, 400, `the body of delete is not {"id": "<id>"`},
		{"jobs", "delete", `{"id": "1", "extra": 1}`, 400, `unknown field "extra"`},
		{"jobs", "delete", `{"id": "1"} {}`, 400, "more than one JSON value"},
		{"jobs", "delete", `not json`, 400, "the body of delete is not"},
		{"jobs", "delete", `{"id": "` + strings.Repeat("9", 10000) + `"}`, 400, "the body of delete is not"},
		{"jobs", "delete", `{"id": "0"}`, 400, `id "0" is not a row's id`},
		{"jobs", "delete", `{}`, 400, `id "" is not a row's id`},
		{"jobs", "delete", `{"id": "424242"}`, 404, "jobs has no row 424242"},
		{"emails", "retry", `{"id": "1"}`, 400, "emails has no dead letters"},
		{"emails", "purge", `{}`, 400, "emails has no dead letters"},
		{"jobs", "purge", `{"id": "1"}`, 400, "purge takes {}"},
		{"jobs", "retry", `{"id": "424242"}`, 404, "jobs_dead has no dead letter 424242"},
		{"jobs", "release", fmt.Sprintf(`{"id": "%d"}`, s.leasedID), 400, `lease "" is not a lease's token`},
		{"jobs", "release", fmt.Sprintf(`{"id": "%d", "lease": "%d"}`, s.leasedID, s.lease+1), 409, "no row"},
	} {
		r := c.act(t, tc.table, tc.action, tc.body)
		require.Equal(t, tc.status, r.status, "%s %s: %v", tc.action, tc.body, r.body)
		require.Contains(t, r.body["error"], tc.says, "%s %s", tc.action, tc.body)
	}
	r := c.do(t, "POST", "api/tables/jobs/actions/delete", `{"id": "1"}`, map[string]string{"X-Fdbqueue-Token": c.token, "Content-Type": "text/plain"})
	require.Equal(t, http.StatusUnsupportedMediaType, r.status)
	// Nothing changed.
	var visible, delayed, leased, dead int64
	require.NoError(t, db.QueryRow(`SELECT visible, delayed, leased, dead FROM fdbqueue_queues WHERE name = 'jobs'`).Scan(&visible, &delayed, &leased, &dead))
	require.Equal(t, []int64{2, 1, 1, 1}, []int64{visible, delayed, leased, dead})
}

// TestMountedUnderAPrefix: under http.StripPrefix the page's relative
// URLs need the prefix's slash, which a request without it is sent to.
func TestMountedUnderAPrefix(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:")
	d := ui.Handler(db)
	t.Cleanup(func() { d.Close() })
	// As the root handler: no ServeMux adds the slash first.
	srv := httptest.NewServer(http.StripPrefix("/queues", d))
	t.Cleanup(srv.Close)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(srv.URL + "/queues?x=1")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusMovedPermanently, res.StatusCode)
	require.Equal(t, "/queues/?x=1", res.Header.Get("Location"))
	for path, want := range map[string]int{"/queues/": 200, "/queues/assets/app.js": 200, "/queues/assets/style.css": 200, "/queues/nope": 404, "/queues/assets/nope.js": 404} {
		res, err := c.Get(srv.URL + path)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, want, res.StatusCode, path)
	}
}

func TestActionsNeedTheTokenAndTheSameOrigin(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:")
	s := seed(t, db)
	c := newClient(t, ui.Handler(db))
	body := fmt.Sprintf(`{"id": "%d", "dead": true}`, s.deadID)
	for name, h := range map[string]map[string]string{
		"no token":    {"Content-Type": "application/json"},
		"wrong token": {"Content-Type": "application/json", "X-Fdbqueue-Token": strings.Repeat("0", len(c.token))},
		"cross-site":  {"Content-Type": "application/json", "X-Fdbqueue-Token": c.token, "Sec-Fetch-Site": "cross-site"},
		"other origin": {"Content-Type": "application/json", "X-Fdbqueue-Token": c.token,
			"Origin": "http://evil.example"},
	} {
		r := c.do(t, "POST", "api/tables/jobs/actions/delete", body, h)
		require.Equal(t, http.StatusForbidden, r.status, name)
		require.NotEmpty(t, r.body["error"], name)
	}
	require.EqualValues(t, 1, sqlInt(t, db, `SELECT COUNT(*) FROM jobs_dead`))
	// Another handler's token does not do either.
	other := newClient(t, ui.Handler(db))
	require.NotEqual(t, c.token, other.token)
	r := c.do(t, "POST", "api/tables/jobs/actions/delete", body, map[string]string{"Content-Type": "application/json", "X-Fdbqueue-Token": other.token})
	require.Equal(t, http.StatusForbidden, r.status)
	// The page's own request does.
	r = c.act(t, "jobs", "delete", body)
	require.Equal(t, http.StatusOK, r.status, "%v", r.body)
	require.EqualValues(t, 0, sqlInt(t, db, `SELECT COUNT(*) FROM jobs_dead`))
	// The responses forbid framing and other origins' scripts.
	h := c.get(t, "api/overview").header
	require.Contains(t, h.Get("Content-Security-Policy"), "default-src 'self'")
	require.Equal(t, "DENY", h.Get("X-Frame-Options"))
}

func TestReadOnlyRefusesActions(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:")
	s := seed(t, db)
	c := newClient(t, ui.Handler(db, ui.ReadOnly()))
	for action, body := range map[string]string{
		"retry":   fmt.Sprintf(`{"id": "%d"}`, s.deadID),
		"delete":  fmt.Sprintf(`{"id": "%d"}`, s.leasedID),
		"release": fmt.Sprintf(`{"id": "%d", "lease": "%d"}`, s.leasedID, s.lease),
		"purge":   `{}`,
	} {
		r := c.act(t, "jobs", action, body)
		require.Equal(t, http.StatusForbidden, r.status, action)
		require.Contains(t, r.body["error"], "read-only", action)
	}
	var visible, delayed, leased, dead int64
	require.NoError(t, db.QueryRow(`SELECT visible, delayed, leased, dead FROM fdbqueue_queues WHERE name = 'jobs'`).Scan(&visible, &delayed, &leased, &dead))
	require.Equal(t, []int64{2, 1, 1, 1}, []int64{visible, delayed, leased, dead})
	// Reads still work.
	r := c.get(t, "api/tables/jobs/rows?state=dead")
	require.Equal(t, http.StatusOK, r.status)
	require.Len(t, r.body["rows"], 1)
}

func TestRowsByState(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:")
	s := seed(t, db)
	for i := range 120 {
		_, err := db.Exec(`INSERT INTO emails (recipient) VALUES (?)`, fmt.Sprint("r", i))
		require.NoError(t, err)
	}
	c := newClient(t, ui.Handler(db))
	// Pages of 50 of the 122 visible emails, in queue order, none twice.
	seen := map[string]bool{}
	for offset, want := range map[int]int{0: 50, 50: 50, 100: 22} {
		r := c.get(t, fmt.Sprintf("api/tables/emails/rows?state=visible&limit=50&offset=%d", offset))
		require.Equal(t, http.StatusOK, r.status, "%v", r.body)
		rows := r.body["rows"].([]any)
		require.Len(t, rows, want, "offset %d", offset)
		require.Equal(t, offset+50 < 122, r.body["more"], "offset %d", offset)
		require.EqualValues(t, 122, r.body["count"])
		for _, row := range rows {
			id := row.([]any)[0].(string)
			require.False(t, seen[id], "row %s on two pages", id)
			seen[id] = true
		}
	}
	require.Len(t, seen, 122)
	// The leased row, with its lease and attempts, and columns named.
	r := c.get(t, "api/tables/jobs/rows?state=leased")
	require.Equal(t, []any{"id", "_visible_at", "_lease", "_attempts", "_error", "priority", "payload"}, r.body["columns"])
	rows := r.body["rows"].([]any)
	require.Len(t, rows, 1)
	row := rows[0].([]any)
	require.Equal(t, fmt.Sprint(s.leasedID), row[0])
	require.Equal(t, fmt.Sprint(s.lease), row[2])
	require.EqualValues(t, 1, row[3])
	until, err := time.Parse(time.RFC3339Nano, row[1].(string))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(time.Hour), until, time.Minute)
	// The dead letter, with its error; and found by id.
	r = c.get(t, "api/tables/jobs/rows?state=dead")
	require.Equal(t, "boom", r.body["rows"].([]any)[0].([]any)[4])
	r = c.get(t, fmt.Sprintf("api/tables/jobs/rows?id=%d", s.deadID))
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "dead", r.body["state"])
	r = c.get(t, fmt.Sprintf("api/tables/jobs/rows?id=%d", s.leasedID))
	require.Equal(t, "leased", r.body["state"])
	r = c.get(t, "api/tables/jobs/rows?state=delayed")
	require.Equal(t, "later", r.body["rows"].([]any)[0].([]any)[6])
}

// TestActionsExactlyOnceUnderFaults runs the actions on a database that
// fails commits with unknown results and conflicts, concurrently, several
// on the same row: each row moves, goes or is released once.
func TestActionsExactlyOnceUnderFaults(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:?fault_unknown=0.3&fault_conflict=0.2&fault_seed=7")
	_, err := db.Exec(`CREATE TABLE jobs (n INT NOT NULL) MAX_ATTEMPTS=1`)
	require.NoError(t, err)
	const dead = 40
	for i := range dead {
		_, err := db.Exec(`INSERT INTO jobs (n, _attempts) VALUES (?, 1)`, i)
		require.NoError(t, err)
	}
	// Every row was leased once already: the next lease moves them all.
	var n int
	require.ErrorIs(t, db.QueryRow(`SELECT n FROM jobs LIMIT 100 FOR LEASE 60`).Scan(&n), sql.ErrNoRows)
	ids := idsOf(t, db, `SELECT id FROM jobs_dead`)
	require.Len(t, ids, dead)
	c := newClient(t, ui.Handler(db))

	// Retry each dead letter from 3 clicks at once: one moves it.
	var retries tally
	var wg sync.WaitGroup
	for _, id := range ids {
		for range 3 {
			wg.Go(func() { retries.add(c.tryAct("jobs", "retry", fmt.Sprintf(`{"id": "%d"}`, id))) })
		}
	}
	wg.Wait()
	require.Empty(t, retries.errs)
	require.Equal(t, map[int]int{200: dead, 404: 2 * dead}, retries.statuses, "%v", retries.bodies)
	require.EqualValues(t, 0, sqlInt(t, db, `SELECT COUNT(*) FROM jobs_dead`))
	for i := range dead {
		require.EqualValues(t, 1, sqlInt(t, db, `SELECT COUNT(*) FROM jobs WHERE n = ?`, i), "row %d", i)
	}

	// Lease them, release half and delete the others, twice each.
	type leased struct{ id, lease int64 }
	rows, err := db.Query(`SELECT id, _lease FROM jobs LIMIT 100 FOR LEASE 600`)
	require.NoError(t, err)
	var ls []leased
	for rows.Next() {
		var l leased
		require.NoError(t, rows.Scan(&l.id, &l.lease))
		ls = append(ls, l)
	}
	require.NoError(t, rows.Err())
	require.Len(t, ls, dead)
	var ends tally
	for i, l := range ls {
		for range 2 {
			wg.Go(func() {
				if i%2 == 0 {
					ends.add(c.tryAct("jobs", "release", fmt.Sprintf(`{"id": "%d", "lease": "%d"}`, l.id, l.lease)))
				} else {
					ends.add(c.tryAct("jobs", "delete", fmt.Sprintf(`{"id": "%d"}`, l.id)))
				}
			})
		}
	}
	wg.Wait()
	require.Empty(t, ends.errs)
	// A second release finds the row under the same token (a token stays
	// the row's until it is leased again) and makes it visible now again,
	// counting no second release; a second delete finds no row (404).
	require.Equal(t, map[int]int{200: dead + dead/2, 404: dead / 2}, ends.statuses, "%v", ends.bodies)
	var rowsN, visible, leasedN, released, deleted int64
	require.NoError(t, db.QueryRow(`SELECT rows, visible, leased, released, deleted FROM fdbqueue_queues WHERE name = 'jobs'`).
		Scan(&rowsN, &visible, &leasedN, &released, &deleted))
	require.Equal(t, []int64{dead / 2, dead / 2, 0, dead / 2, dead / 2}, []int64{rowsN, visible, leasedN, released, deleted})
	require.EqualValues(t, dead/2, sqlInt(t, db, `SELECT COUNT(*) FROM jobs WHERE _visible_at <= NOW()`))

	// Purge, twice at once, the dead letters made again: they go once.
	require.ErrorIs(t, db.QueryRow(`SELECT n FROM jobs LIMIT 100 FOR LEASE 60`).Scan(&n), sql.ErrNoRows)
	require.EqualValues(t, dead/2, sqlInt(t, db, `SELECT COUNT(*) FROM jobs_dead`))
	var purges tally
	for range 2 {
		wg.Go(func() { purges.add(c.tryAct("jobs", "purge", `{}`)) })
	}
	wg.Wait()
	require.Empty(t, purges.errs)
	require.Equal(t, map[int]int{200: 2}, purges.statuses, "%v", purges.bodies)
	require.ElementsMatch(t, []any{float64(dead / 2), float64(0)}, []any{purges.bodies[0]["affected"], purges.bodies[1]["affected"]})
	require.EqualValues(t, 0, sqlInt(t, db, `SELECT COUNT(*) FROM jobs_dead`))
	require.EqualValues(t, dead/2, sqlInt(t, db, `SELECT deleted FROM fdbqueue_queues WHERE name = 'jobs_dead'`))
}

// idsOf reads a column of ids.
func idsOf(t *testing.T, db *sql.DB, query string) []int64 {
	t.Helper()
	rows, err := db.Query(query)
	require.NoError(t, err)
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	return ids
}

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

// TestCloseLeavesNoGoroutine counts the process's goroutines around a
// handler's life: back to the count before it once Close returns. Not
// parallel, so no other test starts or ends goroutines meanwhile.
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
		require.Greater(t, runtime.NumGoroutine(), before, "the sampler runs")
		require.NoError(t, d.Close())
	}
	// Polled here, not with require.Eventually, whose condition runs on
	// a goroutine of its own.
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		var stacks strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
		t.Fatalf("goroutines: %d before, %d after Close:\n%s", before, n, stacks.String())
	}
}

// TestBackoffReleaseIsListedAsLeased pins what docs/dashboard.md says: a
// row released for a retry after its backoff keeps its lease's token, so
// the lists show it under leased while fdbqueue_queues counts it as
// delayed; the lists still find it.
func TestBackoffReleaseIsListedAsLeased(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:")
	_, err := db.Exec(`CREATE TABLE jobs (v INT NOT NULL) BACKOFF=CONSTANT(1 HOUR)`)
	require.NoError(t, err)
	_, err = db.Exec(`INSERT INTO jobs (v) VALUES (1)`)
	require.NoError(t, err)
	var id, lease int64
	require.NoError(t, db.QueryRow(`SELECT id, _lease FROM jobs LIMIT 1 FOR LEASE 60`).Scan(&id, &lease))
	_, err = db.Exec(`UPDATE jobs SET _visible_at = NULL WHERE id = ? AND _lease = ?`, id, lease)
	require.NoError(t, err)
	var delayed, leased int64
	require.NoError(t, db.QueryRow(`SELECT delayed, leased FROM fdbqueue_queues WHERE name = 'jobs'`).Scan(&delayed, &leased))
	require.Equal(t, []int64{1, 0}, []int64{delayed, leased})

	c := newClient(t, ui.Handler(db))
	r := c.get(t, "api/tables/jobs/rows?state=leased")
	require.Len(t, r.body["rows"], 1)
	require.Equal(t, fmt.Sprint(id), r.body["rows"].([]any)[0].([]any)[0])
	require.EqualValues(t, 0, r.body["count"], "counted as delayed")
	r = c.get(t, "api/tables/jobs/rows?state=delayed")
	require.Empty(t, r.body["rows"])
	require.EqualValues(t, 1, r.body["count"])
}

// TestSlowStatementsGet503: a statement that runs out of the query
// timeout gets 503 saying so, not a 500.
func TestSlowStatementsGet503(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:")
	seed(t, db)
	c := newClient(t, ui.Handler(db, ui.WithQueryTimeout(time.Nanosecond)))
	for _, path := range []string{"api/overview", "api/tables/jobs", "api/tables/jobs/rows?state=leased"} {
		r := c.get(t, path)
		require.Equal(t, http.StatusServiceUnavailable, r.status, path)
		require.Contains(t, r.body["error"], "longer than the dashboard's query timeout", path)
	}
}
