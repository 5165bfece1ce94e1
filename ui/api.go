package ui

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fdbqueue/fdbqueue/driver"
	"github.com/fdbqueue/fdbqueue/metrics"
)

// apiError writes a JSON error: {"error": "..."}.
func apiError(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, map[string]string{"error": fmt.Sprintf(format, args...)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	apiError(w, http.StatusMethodNotAllowed, "%s %s: this endpoint takes %s only", r.Method, r.URL.Path, allow)
}

// dbError answers a request whose statement failed: 503 when it ran out
// of time (with why), 500 otherwise. Bad input never gets here: it is
// refused before any statement runs.
func dbError(w http.ResponseWriter, err error, what string) {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		apiError(w, http.StatusServiceUnavailable, "%s took longer than the dashboard's query timeout: %v", what, err)
		return
	case errors.Is(err, driver.ErrTransactionTooOld):
		apiError(w, http.StatusServiceUnavailable, "%s took longer than a transaction may (5 s): the rows of a state are found by reading the table from its head (docs/dashboard.md, \"What it costs\"); find the row by its id: %v", what, err)
		return
	}
	apiError(w, http.StatusInternalServerError, "%s: %v", what, err)
}

// queueJSON is a table's row of fdbqueue_queues, for the page.
type queueJSON struct {
	Name         string `json:"name"`
	Rows         int64  `json:"rows"`
	Exact        bool   `json:"exact"`
	Visible      int64  `json:"visible"`
	Delayed      int64  `json:"delayed"`
	Leased       int64  `json:"leased"`
	HasDead      bool   `json:"hasDead"`
	Dead         int64  `json:"dead"`
	OldestAgeS   int64  `json:"oldestVisibleAgeS"`
	Pushed       int64  `json:"pushed"`
	Popped       int64  `json:"popped"`
	LeasedTotal  int64  `json:"leasedTotal"`
	Acked        int64  `json:"acked"`
	Released     int64  `json:"released"`
	Expired      int64  `json:"expired"`
	DeadLettered int64  `json:"deadLettered"`
	Deleted      int64  `json:"deleted"`
	Returned     int64  `json:"returned"`
	// DeadOf names the table whose dead letters this table holds, "" if
	// none does.
	DeadOf string `json:"deadOf,omitempty"`
	// InPS and OutPS are the rows pushed and done (popped or acked) a
	// second between the last two samples; -1 when not known.
	InPS  float64 `json:"inPerS"`
	OutPS float64 `json:"outPerS"`
}

func toJSON(q metrics.Queue) queueJSON {
	return queueJSON{Name: q.Name, Rows: q.Rows, Exact: q.Exact, Visible: q.Visible, Delayed: q.Delayed, Leased: q.Leased,
		HasDead: q.HasDead, Dead: q.Dead, OldestAgeS: int64(q.OldestVisibleAge / time.Second),
		Pushed: q.Pushed, Popped: q.Popped, LeasedTotal: q.LeasedTotal, Acked: q.Acked, Released: q.Released,
		Expired: q.Expired, DeadLettered: q.DeadLettered, Deleted: q.Deleted, Returned: q.Returned}
}

// serveOverview answers GET api/overview: every table's row of
// fdbqueue_queues, read now, and the sampled series.
//
// With ?table=NAME it answers for that table only (404 if none), with
// ?top=N with the series of the N deepest tables only (dead-letter
// tables left out): the page asks for what it draws, not every table's
// series every refresh.
func (d *Dashboard) serveOverview(w http.ResponseWriter, r *http.Request) {
	only, top, err := parseOverviewQuery(r.URL.Query())
	if err != nil {
		apiError(w, http.StatusBadRequest, "%v; accepted: %s", err, overviewParams)
		return
	}
	ctx, cancel := d.queryContext(r)
	defer cancel()
	qs, err := metrics.Read(ctx, d.db)
	if err != nil {
		dbError(w, err, "reading fdbqueue_queues")
		return
	}
	hasDead := map[string]bool{} // the tables with MAX_ATTEMPTS
	for _, q := range qs {
		hasDead[q.Name] = q.HasDead
	}
	ss, sampleErr := d.samples.samples()
	tables := make([]queueJSON, 0, len(qs))
	for _, q := range qs {
		if only != "" && q.Name != only {
			continue
		}
		j := toJSON(q)
		j.InPS, j.OutPS = lastRates(ss, q.Name)
		if base, ok := strings.CutSuffix(q.Name, deadSuffix); ok && hasDead[base] {
			j.DeadOf = base
		}
		tables = append(tables, j)
	}
	var want func(string) bool
	switch {
	case only != "":
		if len(tables) == 0 {
			apiError(w, http.StatusNotFound, "no table %q in fdbqueue_queues: was it dropped?", clip(only, 100))
			return
		}
		want = func(name string) bool { return name == only }
	case top > 0:
		deepest := make([]queueJSON, 0, len(tables))
		for _, t := range tables {
			if t.DeadOf == "" {
				deepest = append(deepest, t)
			}
		}
		slices.SortStableFunc(deepest, func(a, b queueJSON) int { return cmp.Compare(b.Rows, a.Rows) })
		keep := map[string]bool{}
		for _, t := range deepest[:min(top, len(deepest))] {
			keep[t.Name] = true
		}
		want = func(name string) bool { return keep[name] }
	}
	out := struct {
		Tables    []queueJSON `json:"tables"`
		Series    series      `json:"series"`
		IntervalS float64     `json:"intervalS"`
		ReadOnly  bool        `json:"readOnly"`
		SampleErr string      `json:"sampleError,omitempty"`
	}{tables, toSeries(ss, want), d.opts.interval.Seconds(), d.opts.readOnly, errString(sampleErr)}
	writeJSON(w, http.StatusOK, out)
}

// overviewParams are the accepted query parameters of api/overview.
const overviewParams = "table (one table's counts and series), top (1 to 100: the series of that many tables, the deepest)"

// parseOverviewQuery parses api/overview's query: a table's name, or how
// many tables' series; neither, every table's.
func parseOverviewQuery(v url.Values) (only string, top int, err error) {
	for k, vs := range v {
		if len(vs) != 1 {
			return "", 0, fmt.Errorf("%s given %d times", clip(k, 40), len(vs))
		}
		switch k {
		case "table":
			only = vs[0]
			if only == "" {
				return "", 0, errors.New("table is empty")
			}
		case "top":
			top, err = strconv.Atoi(vs[0])
			if err != nil || top < 1 || top > 100 {
				return "", 0, fmt.Errorf("top %q is not a number from 1 to 100", clip(vs[0], 40))
			}
		default:
			return "", 0, fmt.Errorf("unknown parameter %q", clip(k, 40))
		}
	}
	if only != "" && top > 0 {
		return "", 0, errors.New("table and top together: one table, or the deepest tables")
	}
	return only, top, nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// deadSuffix names a table's dead-letter table (MAX_ATTEMPTS).
const deadSuffix = "_dead"

// tableInfo is a table the request names, with its dead-letter table's
// when it has one.
type tableInfo struct {
	driver.TableInfo
	dead *driver.TableInfo
}

// table returns the table the request's path names, or answers 404
// (listing the tables) and returns false.
func (d *Dashboard) table(w http.ResponseWriter, r *http.Request) (tableInfo, bool) {
	name := r.PathValue("table")
	ctx, cancel := d.queryContext(r)
	defer cancel()
	tables, err := d.tables(ctx)
	if err != nil {
		dbError(w, err, "listing the tables")
		return tableInfo{}, false
	}
	var t tableInfo
	found := false
	for i := range tables {
		if tables[i].Name == name {
			t.TableInfo, found = tables[i], true
		}
	}
	if !found {
		apiError(w, http.StatusNotFound, "no table %q: %s", clip(name, 100), listTables(tables))
		return tableInfo{}, false
	}
	if !hasDeadLetters(t.TableInfo) {
		// A table named name_dead is a queue of its own then.
		return t, true
	}
	for i := range tables {
		if tables[i].Name == name+deadSuffix {
			t.dead = &tables[i]
		}
	}
	return t, true
}

// hasDeadLetters says whether a table has MAX_ATTEMPTS, and so its
// <table>_dead holds its dead letters: as fdbqueue_queues tells (its dead
// column is NULL otherwise).
func hasDeadLetters(t driver.TableInfo) bool {
	return strings.Contains(" "+t.Options, " MAX_ATTEMPTS=")
}

// maxListed is how many tables an error lists.
const maxListed = 20

// listTables names the tables, for an error: the first maxListed of
// them, each clipped.
func listTables(tables []driver.TableInfo) string {
	if len(tables) == 0 {
		return "there are no tables"
	}
	var names []string
	for i, t := range tables {
		if i == maxListed {
			names = append(names, fmt.Sprintf("and %d more", len(tables)-maxListed))
			break
		}
		names = append(names, clip(t.Name, 100))
	}
	return "the tables are " + strings.Join(names, ", ")
}

// tables lists the database's tables (driver.Tables: the catalog, one
// read).
func (d *Dashboard) tables(ctx context.Context) ([]driver.TableInfo, error) {
	c, err := d.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return driver.Tables(ctx, c)
}

// serveTable answers GET api/tables/{table}: its columns, options, and
// its row of fdbqueue_queues.
func (d *Dashboard) serveTable(w http.ResponseWriter, r *http.Request) {
	t, ok := d.table(w, r)
	if !ok {
		return
	}
	ctx, cancel := d.queryContext(r)
	defer cancel()
	q, err := d.queue(ctx, t.Name)
	if err != nil {
		dbError(w, err, "reading fdbqueue_queues")
		return
	}
	cols := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		cols[i] = c.Name + " " + c.Type
	}
	writeJSON(w, http.StatusOK, struct {
		Name     string    `json:"name"`
		Kind     string    `json:"kind"`
		Columns  []string  `json:"columns"`
		Options  string    `json:"options"`
		HasDead  bool      `json:"hasDead"`
		Queue    queueJSON `json:"queue"`
		ReadOnly bool      `json:"readOnly"`
		MaxDepth int       `json:"maxDepth"`
		MaxLimit int       `json:"maxLimit"`
	}{t.Name, t.Kind, cols, t.Options, t.dead != nil, toJSON(q), d.opts.readOnly, MaxDepth, MaxLimit})
}

// queue reads the table's row of fdbqueue_queues (metrics.Read: O(1) a
// table).
func (d *Dashboard) queue(ctx context.Context, name string) (metrics.Queue, error) {
	qs, err := metrics.Read(ctx, d.db)
	if err != nil {
		return metrics.Queue{}, err
	}
	for _, q := range qs {
		if q.Name == name {
			return q, nil
		}
	}
	return metrics.Queue{}, fmt.Errorf("fdbqueue_queues has no row for %s: was it dropped?", name)
}
