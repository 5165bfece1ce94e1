// Package ui is fdbqueue's dashboard: an http.Handler that shows a
// database's queues and acts on them, in the manner of asynqmon. A
// service mounts it in two lines:
//
//	d := ui.Handler(db) // db: a *sql.DB of the fdbqueue driver
//	mux.Handle("/queues/", http.StripPrefix("/queues", d))
//
// and calls d.Close when it shuts down. The command `fdbqueue ui DSN`
// serves it on its own (docs/dashboard.md).
//
// # What it shows
//
// The page (HTML, CSS and JavaScript embedded in the binary: no build
// step, nothing fetched from elsewhere, it works offline) lists every
// table with its rows by state (visible, delayed, leased, dead), its
// oldest visible row's age and its throughput, and plots them over the
// last minutes; a table's page lists its rows by state and offers the
// actions. The page reads a JSON API served under the same handler:
//
//	GET  api/overview                          every table's row of fdbqueue_queues, and the plots' series
//	GET  api/overview?top=N                    the same, with the N deepest tables' series only
//	GET  api/overview?table=NAME               one table's row and series (404 if none)
//	GET  api/tables/{table}                    a table's columns, options and counts
//	GET  api/tables/{table}/rows?state=&limit=&offset=   a page of rows; or ?id= one row
//	POST api/tables/{table}/actions/{action}   retry, delete, release or purge
//
// Bad input gets a 4xx with a JSON body {"error": "..."} that says what
// is accepted; a statement that fails gets a 5xx (503 when it ran out of
// time).
//
// # Actions
//
// Each action is one autocommit statement, exactly-once in this driver
// (docs/sql.md, "Exactly-once"):
//
//	retry    INSERT INTO t SELECT * FROM t_dead WHERE id = ? LIMIT 1 FOR POP   (a new id, _attempts 0)
//	delete   DELETE FROM t WHERE id = ?   (or t_dead)
//	release  UPDATE t SET _visible_at = NOW() WHERE id = ? AND _lease = ?
//	purge    DELETE FROM t_dead
//
// ReadOnly refuses them all (403) and the page does not offer them.
//
// # Security
//
// The handler has no authentication: mount it behind the service's (the
// command adds a token or basic auth). Actions are POSTs that must carry
// the page's token (a random value per handler, in the X-Fdbqueue-Token
// header) and pass http.CrossOriginProtection (Sec-Fetch-Site, or Origin
// against Host): another site cannot make a browser act. Responses carry
// a Content-Security-Policy that allows the handler's own scripts only,
// and the page shows names and values as text, never as HTML. Served
// without authentication on a loopback address, check the request's Host
// in front of it (the command does): a page of another site whose name is
// rebound to 127.0.0.1 (DNS rebinding) is same-origin with the handler.
//
// # Cost
//
// While the handler lives, it reads fdbqueue_queues once every interval
// (WithInterval, 1 s by default: one statement, O(1) a table) and keeps
// WithHistory samples (300: five minutes). An open page (the overview or
// a table's) adds a read of fdbqueue_queues every 2 s. A page of rows is one SELECT; the dialect
// reads a table from its head in queue order and has no OFFSET, so a
// page at offset o reads the o rows before it too, and lists go MaxDepth
// rows deep. A state's list stops reading once it has found as many rows
// as fdbqueue_queues counts in it; rows that come late in queue order
// (leased or delayed behind many visible rows) are found by a scan from
// the head. A row is found by its id in one read.
//
// # Files
//
//   - ui.go: Handler, its options, routing, Close.
//   - sampler.go: the samples of fdbqueue_queues and the plots' series.
//   - api.go: the overview and table endpoints, JSON errors.
//   - rows.go: pages of rows by state, and by id.
//   - actions.go: the actions, and their CSRF checks.
package ui
