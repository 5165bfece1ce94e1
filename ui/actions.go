package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/fdbqueue/fdbqueue/driver"
)

// csrfHeader carries the page's token with each action.
const csrfHeader = "X-Fdbqueue-Token"

// maxActionBody bounds an action's JSON body.
const maxActionBody = 4 << 10

// An action is one statement, autocommit, so exactly-once (docs/sql.md,
// "Exactly-once"): run returns the response.
type action struct {
	name string
	// needs says which fields of the body it takes, for errors.
	needs string
	run   func(d *Dashboard, r *http.Request, t tableInfo, b actionBody) (int, any)
}

// actionBody is an action's JSON body. Ids and leases are strings: they
// pass JavaScript's 2^53.
type actionBody struct {
	ID    string `json:"id"`
	Lease string `json:"lease"`
	Dead  bool   `json:"dead"`
}

// What each action's body holds.
const (
	retryBody   = `{"id": "<id of a dead letter>"}`
	deleteBody  = `{"id": "<id>", "dead": <true for a dead letter>}`
	releaseBody = `{"id": "<id>", "lease": "<its _lease>"}`
	purgeBody   = `{}`
)

var actions = map[string]action{
	"retry":   {"retry", retryBody, (*Dashboard).retry},
	"delete":  {"delete", deleteBody, (*Dashboard).delete},
	"release": {"release", releaseBody, (*Dashboard).release},
	"purge":   {"purge", purgeBody, (*Dashboard).purge},
}

// serveAction answers POST api/tables/{table}/actions/{action}: refused
// in read-only mode (403), without the page's token or from another
// origin (403), and for bad input (4xx, saying what is accepted), before
// any statement runs.
func (d *Dashboard) serveAction(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		methodNotAllowed(w, r, http.MethodPost)
		return
	}
	if d.opts.readOnly {
		apiError(w, http.StatusForbidden, "the dashboard is read-only: it takes no actions")
		return
	}
	if err := d.csrf.Check(r); err != nil {
		apiError(w, http.StatusForbidden, "refused a cross-origin request: actions come from the dashboard's own page (%v)", err)
		return
	}
	if !tokenOK(r.Header.Get(csrfHeader), d.token) {
		apiError(w, http.StatusForbidden, "missing or wrong %s header: actions come from the dashboard's own page, which sends it", csrfHeader)
		return
	}
	a, ok := actions[r.PathValue("action")]
	if !ok {
		apiError(w, http.StatusNotFound, "no action %q: the actions are retry, delete, release and purge", clip(r.PathValue("action"), 40))
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		apiError(w, http.StatusUnsupportedMediaType, "an action's body is JSON (Content-Type: application/json), not %q: %s", clip(ct, 60), a.needs)
		return
	}
	var b actionBody
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxActionBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil && !errors.Is(err, io.EOF) {
		apiError(w, http.StatusBadRequest, "the body of %s is not %s: %v", a.name, a.needs, err)
		return
	}
	if dec.More() {
		apiError(w, http.StatusBadRequest, "the body of %s holds more than one JSON value: %s", a.name, a.needs)
		return
	}
	t, ok := d.table(w, r)
	if !ok {
		return
	}
	status, resp := a.run(d, r, t, b)
	writeJSON(w, status, resp)
}

// tokenOK compares the tokens in constant time.
func tokenOK(got, want string) bool {
	if len(got) != len(want) {
		return false
	}
	var v byte
	for i := range len(got) {
		v |= got[i] ^ want[i]
	}
	return v == 0
}

func errBody(format string, args ...any) any {
	return map[string]string{"error": fmt.Sprintf(format, args...)}
}

// done is an action's success: how many rows it changed, and what.
func done(affected int64, message string) any {
	return map[string]any{"affected": affected, "message": message}
}

// exec runs an action's statement, and answers its failure.
func (d *Dashboard) exec(r *http.Request, stmt string, args ...any) (int64, int64, int, any) {
	ctx, cancel := d.queryContext(r)
	defer cancel()
	res, err := d.db.ExecContext(ctx, stmt, args...)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, driver.ErrTransactionTooOld) {
		// Given up on, perhaps while it committed.
		return 0, 0, http.StatusServiceUnavailable, errBody("%s took longer than the dashboard's query timeout (%v): it may have taken effect or not, the rows read again tell (%v)", stmt, d.opts.queryTimeout, err)
	}
	if err != nil {
		return 0, 0, http.StatusInternalServerError, errBody("%s: %v", stmt, err)
	}
	n, _ := res.RowsAffected()
	last, _ := res.LastInsertId()
	return n, last, 0, nil
}

// retry moves one dead letter back to its table, in one statement that
// removes it from the dead letters in the same transaction: a new id,
// _attempts 0 (docs/sql.md, "Redrive").
func (d *Dashboard) retry(r *http.Request, t tableInfo, b actionBody) (int, any) {
	if t.dead == nil {
		return http.StatusBadRequest, errBody("table %s has no dead letters (it was created without MAX_ATTEMPTS)", t.Name)
	}
	id, err := parseID(b.ID)
	if err != nil {
		return http.StatusBadRequest, errBody("retry takes %s: %v", retryBody, err)
	}
	n, newID, status, resp := d.exec(r, "INSERT INTO "+quote(t.Name)+" SELECT * FROM "+quote(t.Name+deadSuffix)+" WHERE id = ? LIMIT 1 FOR POP", id)
	if status != 0 {
		return status, resp
	}
	if n == 0 {
		return http.StatusNotFound, errBody("%s%s has no dead letter %d (retried or deleted already?)", t.Name, deadSuffix, id)
	}
	return http.StatusOK, done(n, fmt.Sprintf("dead letter %d is back in %s as row %d", id, t.Name, newID))
}

// delete removes one row of the table, or of its dead letters.
func (d *Dashboard) delete(r *http.Request, t tableInfo, b actionBody) (int, any) {
	id, err := parseID(b.ID)
	if err != nil {
		return http.StatusBadRequest, errBody("delete takes %s: %v", deleteBody, err)
	}
	name := t.Name
	if b.Dead {
		if t.dead == nil {
			return http.StatusBadRequest, errBody("table %s has no dead letters (it was created without MAX_ATTEMPTS)", t.Name)
		}
		name += deadSuffix
	}
	n, _, status, resp := d.exec(r, "DELETE FROM "+quote(name)+" WHERE id = ?", id)
	if status != 0 {
		return status, resp
	}
	if n == 0 {
		return http.StatusNotFound, errBody("%s has no row %d (deleted, popped or acked already?)", name, id)
	}
	return http.StatusOK, done(n, fmt.Sprintf("row %d of %s deleted", id, name))
}

// release ends a lease now: the row is visible at once, if it still
// holds that lease (another lease taken meanwhile is left alone).
func (d *Dashboard) release(r *http.Request, t tableInfo, b actionBody) (int, any) {
	id, err := parseID(b.ID)
	if err != nil {
		return http.StatusBadRequest, errBody("release takes %s: %v", releaseBody, err)
	}
	lease, err := strconv.ParseInt(b.Lease, 10, 64)
	if err != nil || lease <= 0 {
		return http.StatusBadRequest, errBody("release takes %s: lease %q is not a lease's token (a positive integer)", releaseBody, clip(b.Lease, 40))
	}
	n, _, status, resp := d.exec(r, "UPDATE "+quote(t.Name)+" SET _visible_at = NOW() WHERE id = ? AND _lease = ?", id, lease)
	if status != 0 {
		return status, resp
	}
	if n == 0 {
		return http.StatusConflict, errBody("%s has no row %d under lease %d: it was acked, deleted, or leased again", t.Name, id, lease)
	}
	return http.StatusOK, done(n, fmt.Sprintf("row %d of %s released: visible now", id, t.Name))
}

// purge deletes every dead letter of the table, in one small transaction
// whatever their number (DELETE FROM t without WHERE).
func (d *Dashboard) purge(r *http.Request, t tableInfo, b actionBody) (int, any) {
	if t.dead == nil {
		return http.StatusBadRequest, errBody("table %s has no dead letters (it was created without MAX_ATTEMPTS)", t.Name)
	}
	if b != (actionBody{}) {
		return http.StatusBadRequest, errBody("purge takes %s", purgeBody)
	}
	n, _, status, resp := d.exec(r, "DELETE FROM "+quote(t.Name+deadSuffix))
	if status != 0 {
		return status, resp
	}
	return http.StatusOK, done(n, fmt.Sprintf("%d dead letters of %s purged", n, t.Name))
}
