package ui

import (
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"
)

//go:embed assets
var assets embed.FS

// Defaults of the options.
const (
	// DefaultInterval is how often the dashboard samples fdbqueue_queues
	// for its plots.
	DefaultInterval = time.Second
	// DefaultHistory is how many samples it keeps: five minutes at
	// DefaultInterval.
	DefaultHistory = 300
	// DefaultQueryTimeout bounds each statement a request runs.
	DefaultQueryTimeout = 3 * time.Second
)

// Option configures Handler.
type Option func(*options)

type options struct {
	readOnly     bool
	interval     time.Duration
	history      int
	queryTimeout time.Duration
}

// ReadOnly makes the dashboard show the queues and refuse every action
// (403), which the page then does not offer.
func ReadOnly() Option { return func(o *options) { o.readOnly = true } }

// WithInterval sets how often fdbqueue_queues is sampled for the plots
// (DefaultInterval otherwise; at least 100 ms).
func WithInterval(d time.Duration) Option {
	return func(o *options) { o.interval = max(d, 100*time.Millisecond) }
}

// MaxHistory is the most samples WithHistory keeps: a day at
// DefaultInterval.
const MaxHistory = 86400

// WithHistory sets how many samples the plots show (DefaultHistory
// otherwise; from 2 to MaxHistory). The samples take memory as they
// come: 40 bytes a table each.
func WithHistory(n int) Option { return func(o *options) { o.history = min(max(n, 2), MaxHistory) } }

// WithQueryTimeout bounds each statement a request runs
// (DefaultQueryTimeout otherwise, and for d <= 0): a page of rows that
// would take longer fails with 503 and says why.
func WithQueryTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.queryTimeout = d
		}
	}
}

// Dashboard is the dashboard's http.Handler (Handler returns it). Close
// stops its sampling.
type Dashboard struct {
	db      *sql.DB
	opts    options
	token   string // the CSRF token the page sends with each action
	mux     *http.ServeMux
	page    *template.Template
	static  http.Handler
	samples *sampler
	csrf    *http.CrossOriginProtection

	closeOnce sync.Once
}

// Handler returns the dashboard of db's queues: an http.Handler that
// serves the page and its JSON API from its root, and samples
// fdbqueue_queues every interval until Close. Mount it at a prefix with
// http.StripPrefix:
//
//	d := ui.Handler(db)
//	defer d.Close()
//	mux.Handle("/queues/", http.StripPrefix("/queues", d))
//
// It has no authentication of its own: put the service's in front of it.
// Actions need the page's token and a same-origin request (CSRF).
func Handler(db *sql.DB, opts ...Option) *Dashboard {
	o := options{interval: DefaultInterval, history: DefaultHistory, queryTimeout: DefaultQueryTimeout}
	for _, f := range opts {
		f(&o)
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	d := &Dashboard{
		db:    db,
		opts:  o,
		token: hex.EncodeToString(b[:]),
		page:  template.Must(template.ParseFS(assets, "assets/index.html")),
		csrf:  http.NewCrossOriginProtection(),
	}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree has assets/
	}
	d.static = http.StripPrefix("/assets/", http.FileServerFS(static))
	d.samples = startSampler(db, o.interval, o.history, o.queryTimeout)
	d.routes()
	return d
}

// Close stops the sampling and waits for it to end. The handler still
// serves afterwards, with no new samples.
func (d *Dashboard) Close() error {
	d.closeOnce.Do(d.samples.stop)
	return nil
}

func (d *Dashboard) routes() {
	m := http.NewServeMux()
	m.HandleFunc("/{$}", d.serveIndex)
	m.Handle("/assets/", d.static)
	m.HandleFunc("/api/overview", d.getOnly(d.serveOverview))
	m.HandleFunc("/api/tables/{table}", d.getOnly(d.serveTable))
	m.HandleFunc("/api/tables/{table}/rows", d.getOnly(d.serveRows))
	m.HandleFunc("/api/tables/{table}/actions/{action}", d.serveAction)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/") {
			apiError(w, http.StatusNotFound, "no API endpoint %s: the API serves GET api/overview, GET api/tables/{table}, GET api/tables/{table}/rows, POST api/tables/{table}/actions/{retry|delete|release|purge}", r.URL.Path)
			return
		}
		http.Error(w, "no page "+r.URL.Path+": the dashboard is at this handler's root", http.StatusNotFound)
	})
	d.mux = m
}

// ServeHTTP serves the page, its assets and its API.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	if r.URL.Path == "" {
		// Mounted with http.StripPrefix("/queues", ...) and asked for
		// "/queues": the page's relative URLs need the slash.
		http.Redirect(w, r, redirectSlash(r), http.StatusMovedPermanently)
		return
	}
	d.mux.ServeHTTP(w, r)
}

// redirectSlash is the request's own path with a slash added.
func redirectSlash(r *http.Request) string {
	p := r.RequestURI
	if i := strings.IndexByte(p, '?'); i >= 0 {
		return p[:i] + "/" + p[i:]
	}
	return p + "/"
}

func (d *Dashboard) serveIndex(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, r, http.MethodGet)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = d.page.Execute(w, struct {
		Token    string
		ReadOnly bool
	}{d.token, d.opts.readOnly})
}

// getOnly refuses other methods than GET (and HEAD).
func (d *Dashboard) getOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, r, http.MethodGet)
			return
		}
		h(w, r)
	}
}

// queryContext bounds one statement of a request.
func (d *Dashboard) queryContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), d.opts.queryTimeout)
}
