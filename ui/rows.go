package ui

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fdbqueue/fdbqueue/driver"
	"github.com/fdbqueue/fdbqueue/metrics"
)

// Paging bounds. The dialect reads a table's rows from its head, in queue
// order, and has no OFFSET and no order a cursor could resume from (ids
// come in blocks from random starts, not in queue order; see docs/sql.md):
// a page at offset o reads the o rows of its state before it too. So the
// rows of a state are listed to MaxDepth deep, a page at most MaxLimit
// rows, and any row is found by its id (one read).
const (
	MaxLimit     = 500
	MaxDepth     = 1000
	defaultLimit = 50
	// maxValue is how much of a value a page shows (bytes of text, or of
	// a BLOB shown in hex); longer ones end with "…".
	maxValue = 256
)

// A state is a list of a table's rows, and the statement's WHERE that
// selects them.
type state struct {
	name  string
	where string // "" for every row (of the dead-letter table)
	dead  bool   // of <table>_dead
}

// states are the lists a table page shows. Leased and delayed rows are
// told apart by _lease (a row never leased has 0): a row released with
// _visible_at = NULL, waiting for its backoff, still holds its last
// lease's token, so it is listed as leased although fdbqueue_queues
// counts it as delayed (the dialect shows no column that tells them
// apart).
var states = []state{
	{name: "visible", where: "_visible_at <= NOW()"},
	{name: "delayed", where: "_visible_at > NOW() AND _lease = 0"},
	{name: "leased", where: "_visible_at > NOW() AND _lease != 0"},
	{name: "dead", dead: true},
}

// rowsParams are the accepted query parameters of api/tables/{t}/rows.
const rowsParams = "state (visible, delayed, leased or dead), limit (1 to 500), offset (0 or more, offset+limit at most 1000), id (a row's id, instead of state)"

// pseudo are the pseudo-columns a page shows before the table's own.
var pseudo = []string{"id", "_visible_at", "_lease", "_attempts", "_error"}

// serveRows answers GET api/tables/{table}/rows: a page of a state's rows
// (state, limit, offset), or the row with an id, in the table or its dead
// letters.
func (d *Dashboard) serveRows(w http.ResponseWriter, r *http.Request) {
	t, ok := d.table(w, r)
	if !ok {
		return
	}
	q, err := parseRowsQuery(r.URL.Query())
	if err != nil {
		apiError(w, http.StatusBadRequest, "%v; accepted: %s", err, rowsParams)
		return
	}
	if q.st.dead && t.dead == nil {
		apiError(w, http.StatusBadRequest, "table %s has no dead letters (it was created without MAX_ATTEMPTS): states visible, delayed, leased", t.Name)
		return
	}
	ctx, cancel := d.queryContext(r)
	defer cancel()
	if q.id != 0 {
		d.serveRowByID(ctx, w, t, q.id)
		return
	}
	qs, err := d.queue(ctx, t.Name)
	if err != nil {
		dbError(w, err, "reading fdbqueue_queues")
		return
	}
	count, bound := stateCount(qs, q.st)
	// Read no further than the counts say there are rows: the scan
	// stops when it has found them, rather than read to the table's end
	// looking for more.
	n := int64(q.offset + q.limit)
	if bound >= 0 {
		n = min(n, bound)
	}
	name := t.Name
	if q.st.dead {
		name += deadSuffix
	}
	page := rowsPage{State: q.st.name, Offset: q.offset, Limit: q.limit, Count: count, Columns: columns(t.TableInfo), Rows: [][]any{}}
	if n > int64(q.offset) {
		rows, err := d.selectRows(ctx, t.TableInfo, name, q.st.where, n)
		if err != nil {
			dbError(w, err, "reading the rows of "+name)
			return
		}
		if len(rows) > q.offset {
			page.Rows = rows[q.offset:]
		}
	}
	page.More = len(page.Rows) == q.limit && q.offset+q.limit < MaxDepth &&
		(bound < 0 || int64(q.offset+q.limit) < bound)
	writeJSON(w, http.StatusOK, page)
}

// rowsPage is a page of rows. Values are JSON strings for ids, leases,
// times (RFC 3339) and blobs (text if UTF-8, else 0x and hex), numbers
// otherwise; Count is the state's rows by fdbqueue_queues (-1: not
// known).
type rowsPage struct {
	State   string   `json:"state"`
	Offset  int      `json:"offset"`
	Limit   int      `json:"limit"`
	Count   int64    `json:"count"`
	More    bool     `json:"more"`
	Columns []string `json:"columns"`
	Rows    [][]any  `json:"rows"`
}

// stateCount is how many rows fdbqueue_queues counts in st, and how many
// rows its list may hold: -1 when it does not know. A row waiting for
// its backoff is delayed to fdbqueue_queues but listed as leased (see
// states), so either list may hold the delayed and the leased rows.
func stateCount(q metrics.Queue, st state) (count, bound int64) {
	switch {
	case st.dead:
		return q.Dead, q.Dead
	case !q.Exact:
		return -1, -1
	case st.name == "visible":
		return q.Visible, q.Visible
	case st.name == "delayed":
		return q.Delayed, q.Delayed + q.Leased
	}
	return q.Leased, q.Delayed + q.Leased
}

// rowsQuery is a parsed api/tables/{t}/rows query.
type rowsQuery struct {
	st            state
	limit, offset int
	id            int64
}

func parseRowsQuery(v url.Values) (rowsQuery, error) {
	q := rowsQuery{st: states[0], limit: defaultLimit}
	for k, vs := range v {
		if len(vs) != 1 {
			return q, fmt.Errorf("%s given %d times", clip(k, 40), len(vs))
		}
		val := vs[0]
		var err error
		switch k {
		case "state":
			found := false
			for _, st := range states {
				if st.name == val {
					q.st, found = st, true
				}
			}
			if !found {
				return q, fmt.Errorf("no state %q", clip(val, 40))
			}
		case "limit":
			q.limit, err = strconv.Atoi(val)
			if err != nil || q.limit < 1 || q.limit > MaxLimit {
				return q, fmt.Errorf("limit %q is not a number from 1 to %d", clip(val, 40), MaxLimit)
			}
		case "offset":
			q.offset, err = strconv.Atoi(val)
			if err != nil || q.offset < 0 || q.offset > MaxDepth {
				return q, fmt.Errorf("offset %q is not a number from 0 to %d", clip(val, 40), MaxDepth)
			}
		case "id":
			if q.id, err = parseID(val); err != nil {
				return q, err
			}
		default:
			return q, fmt.Errorf("unknown parameter %q", clip(k, 40))
		}
	}
	if q.offset+q.limit > MaxDepth {
		return q, fmt.Errorf("offset+limit is %d: a page reads the rows before it too (the dialect has no OFFSET), so the lists go %d rows deep; find a deeper row by its id", q.offset+q.limit, MaxDepth)
	}
	return q, nil
}

// parseID parses a row's id: a positive integer.
func parseID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("id %q is not a row's id (a positive integer, at most %d)", clip(s, 40), int64(1<<63-1))
	}
	return id, nil
}

// clip shortens what the client sent, for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// columns are the columns of a page: the pseudo-columns, then the
// table's.
func columns(t driver.TableInfo) []string {
	out := append([]string(nil), pseudo...)
	for _, c := range t.Columns {
		out = append(out, c.Name)
	}
	return out
}

// quote quotes a name for the dialect (MySQL's backticks).
func quote(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// selectList is the SELECT's columns of a page.
func selectList(t driver.TableInfo) string {
	cols := append([]string(nil), pseudo...)
	for _, c := range t.Columns {
		cols = append(cols, quote(c.Name))
	}
	return strings.Join(cols, ", ")
}

// selectRows reads the first n rows of table (t's columns) that match
// where, in queue order: SELECT ... [WHERE ...] LIMIT n, which the
// dialect serves by reading the table from its head and stopping at the
// n-th match.
func (d *Dashboard) selectRows(ctx context.Context, t driver.TableInfo, table, where string, n int64) ([][]any, error) {
	stmt := "SELECT " + selectList(t) + " FROM " + quote(table)
	if where != "" {
		stmt += " WHERE " + where
	}
	stmt += " LIMIT " + strconv.FormatInt(n, 10)
	return d.query(ctx, stmt)
}

func (d *Dashboard) query(ctx context.Context, stmt string, args ...any) ([][]any, error) {
	rows, err := d.db.QueryContext(ctx, stmt, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	out := [][]any{}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i := range vals {
			vals[i] = display(i, vals[i])
		}
		out = append(out, vals)
	}
	return out, rows.Err()
}

// display makes a value of column i of a page JSON-safe: ids and leases
// (columns 0 and 2) as strings (they pass 2^53), times as RFC 3339 ("" for
// the zero time: never delayed or leased), long values clipped.
func display(i int, v any) any {
	switch v := v.(type) {
	case int64:
		if i == 0 || i == 2 || v > 1<<53 || v < -(1<<53) {
			return strconv.FormatInt(v, 10)
		}
		return v
	case time.Time:
		if v.IsZero() {
			return ""
		}
		return v.UTC().Format(time.RFC3339Nano)
	case string:
		return clip(v, maxValue)
	case []byte:
		if utf8.Valid(v) {
			return clip(string(v), maxValue)
		}
		if len(v) > maxValue/2 {
			return "0x" + hex.EncodeToString(v[:maxValue/2]) + "…"
		}
		return "0x" + hex.EncodeToString(v)
	}
	return v
}

// serveRowByID answers a lookup by id: the row in the table or in its
// dead letters (WHERE id = ?: one read each), with the state it is in.
func (d *Dashboard) serveRowByID(ctx context.Context, w http.ResponseWriter, t tableInfo, id int64) {
	tables := []string{t.Name}
	if t.dead != nil {
		tables = append(tables, t.Name+deadSuffix)
	}
	for _, name := range tables {
		rows, err := d.query(ctx, "SELECT "+selectList(t.TableInfo)+" FROM "+quote(name)+" WHERE id = ?", id)
		if err != nil {
			dbError(w, err, "reading row "+strconv.FormatInt(id, 10)+" of "+name)
			return
		}
		if len(rows) == 0 {
			continue
		}
		st := "dead"
		if name == t.Name {
			st = rowState(rows[0])
		}
		writeJSON(w, http.StatusOK, rowsPage{State: st, Limit: 1, Count: 1, Columns: columns(t.TableInfo), Rows: rows})
		return
	}
	apiError(w, http.StatusNotFound, "table %s has no row with id %d%s", t.Name, id, map[bool]string{true: " (nor has " + t.Name + deadSuffix + ")"}[t.dead != nil])
}

// rowState tells a row's state from its _visible_at and _lease, as the
// states' WHEREs do.
func rowState(r []any) string {
	at, _ := r[1].(string)
	when, err := time.Parse(time.RFC3339Nano, at)
	if at == "" || err == nil && !when.After(time.Now()) {
		return "visible"
	}
	if r[2] == "0" {
		return "delayed"
	}
	return "leased"
}
