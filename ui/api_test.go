package ui_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
	// The page's own: scripts and styles from its files only, no inline
	// ones, no eval.
	page := c.get(t, "").header.Get("Content-Security-Policy")
	require.Contains(t, page, "default-src 'self'")
	for _, weak := range []string{"unsafe-inline", "unsafe-eval", "script-src", "style-src", "*", "data: 'self'; script"} {
		require.NotContains(t, page, weak)
	}
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

// TestTableNamedDeadIsNotDeadLetters: t_dead holds t's dead letters only
// when t has MAX_ATTEMPTS. Otherwise it is a queue of its own: listed in
// the overview, and no action of t's (retry, purge) touches it.
func TestTableNamedDeadIsNotDeadLetters(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:")
	for _, stmt := range []string{
		`CREATE TABLE orders (v INT)`,
		`CREATE TABLE orders_dead (v INT)`,
		`INSERT INTO orders_dead (v) VALUES (7)`,
	} {
		_, err := db.Exec(stmt)
		require.NoError(t, err, stmt)
	}
	id := fmt.Sprint(sqlInt(t, db, `SELECT id FROM orders_dead`))
	c := newClient(t, ui.Handler(db))
	for _, q := range c.get(t, "api/overview").body["tables"].([]any) {
		require.NotContains(t, q, "deadOf", "%v: listed as a table of its own", q)
	}
	require.Equal(t, false, c.get(t, "api/tables/orders").body["hasDead"])
	require.Equal(t, 400, c.get(t, "api/tables/orders/rows?state=dead").status)
	for action, body := range map[string]string{"retry": `{"id": "` + id + `"}`, "purge": `{}`, "delete": `{"id": "` + id + `", "dead": true}`} {
		r := c.act(t, "orders", action, body)
		require.Equal(t, 400, r.status, "%s: %v", action, r.body)
		require.Contains(t, r.body["error"], "orders has no dead letters", action)
	}
	require.EqualValues(t, 1, sqlInt(t, db, `SELECT COUNT(*) FROM orders_dead`))
	require.EqualValues(t, 0, sqlInt(t, db, `SELECT COUNT(*) FROM orders`))
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

// TestOddNamesThroughTheAPI: tables and columns named with backticks,
// quotes, markup, unicode and URL delimiters are read and acted on like
// any: the statements the handler builds quote them (backticks doubled).
func TestOddNamesThroughTheAPI(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:")
	col := "c`o'l\"--"
	c := newClient(t, ui.Handler(db))
	for _, name := range []string{"x`y", "ünï 表", "a/b?c#d%e f", `<b>"x"</b>`, "t; DROP TABLE other", strings.Repeat("n", 250)} {
		q := "`" + strings.ReplaceAll(name, "`", "``") + "`"
		qc := "`" + strings.ReplaceAll(col, "`", "``") + "`"
		for _, stmt := range []string{
			fmt.Sprintf("CREATE TABLE %s (%s TEXT) MAX_ATTEMPTS=1", q, qc),
			fmt.Sprintf("INSERT INTO %s (%s, _attempts) VALUES ('dead', 1), ('leased', 0), ('visible', 0)", q, qc),
		} {
			_, err := db.Exec(stmt)
			require.NoError(t, err, stmt)
		}
		var leasedID, lease int64
		require.NoError(t, db.QueryRow(fmt.Sprintf("SELECT id, _lease FROM %s LIMIT 1 FOR LEASE 3600", q)).Scan(&leasedID, &lease))
		deadID := sqlInt(t, db, fmt.Sprintf("SELECT id FROM %s", "`"+strings.ReplaceAll(name+"_dead", "`", "``")+"`"))
		p := url.PathEscape(name)

		info := c.get(t, "api/tables/"+p)
		require.Equal(t, 200, info.status, "%s: %v", name, info.body)
		require.Equal(t, name, info.body["name"])
		require.Equal(t, []any{col + " TEXT"}, info.body["columns"])
		for _, st := range []string{"visible", "leased", "dead"} {
			r := c.get(t, "api/tables/"+p+"/rows?state="+st)
			require.Equal(t, 200, r.status, "%s %s: %v", name, st, r.body)
			require.Len(t, r.body["rows"], 1, "%s %s", name, st)
			require.Equal(t, st, r.body["rows"].([]any)[0].([]any)[5], "%s %s", name, st)
		}
		require.Equal(t, 200, c.get(t, fmt.Sprintf("api/tables/%s/rows?id=%d", p, deadID)).status)
		require.Equal(t, 200, c.get(t, "api/overview?table="+url.QueryEscape(name)).status)

		r := c.act(t, p, "release", fmt.Sprintf(`{"id": "%d", "lease": "%d"}`, leasedID, lease))
		require.Equal(t, 200, r.status, "%s: %v", name, r.body)
		r = c.act(t, p, "retry", fmt.Sprintf(`{"id": "%d"}`, deadID))
		require.Equal(t, 200, r.status, "%s: %v", name, r.body)
		require.EqualValues(t, 3, sqlInt(t, db, fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE _visible_at <= NOW()", q)), name)
		r = c.act(t, p, "delete", fmt.Sprintf(`{"id": "%d"}`, leasedID))
		require.Equal(t, 200, r.status, "%s: %v", name, r.body)
		r = c.act(t, p, "purge", `{}`)
		require.Equal(t, 200, r.status, "%s: %v", name, r.body)
		require.EqualValues(t, 2, sqlInt(t, db, fmt.Sprintf("SELECT COUNT(*) FROM %s", q)), name)
	}
}
