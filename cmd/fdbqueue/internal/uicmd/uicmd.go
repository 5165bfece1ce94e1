// Package uicmd is fdbqueue ui, which serves the dashboard (package ui)
// of a database on its own (cmd/fdbqueue hands it fdbqueue ui ARGS):
//
//	fdbqueue ui DSN [--listen 127.0.0.1:8080] [--read-only] [--auth token:SECRET | --auth basic:USER:PASS]
//
// On a loopback address it needs no credentials; it refuses any other
// address without --auth. docs/dashboard.md describes it for users.
package uicmd

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	_ "github.com/fdbqueue/fdbqueue/driver" // the fdbqueue driver
	"github.com/fdbqueue/fdbqueue/ui"
)

const usage = `fdbqueue ui serves the dashboard of a database: every table's counts,
throughput and age plots, its rows by state, and actions (retry a dead
letter, delete a row, release a lease, purge dead letters).

usage: fdbqueue ui DSN [--listen ADDR] [--read-only] [--auth token:SECRET | --auth basic:USER:PASS]

  --listen ADDR   the address to serve on (default 127.0.0.1:8080). Any
                  address but a loopback one (127.0.0.1, ::1, localhost)
                  needs --auth.
  --read-only     show the queues, take no action
  --auth token:SECRET
                  require the token: open the URL printed at start
                  (?token=SECRET sets a cookie), or send
                  Authorization: Bearer SECRET
  --auth basic:USER:PASS
                  require HTTP basic authentication
  --auth env:VAR  the same, from the environment variable VAR (token:...
                  or basic:...): out of the process list, unlike an
                  argument
  --interval DURATION
                  how often to sample the queues for the plots (default 1s)

On a file: DSN it runs beside the application: several processes share
one file: directory. A memory: DSN is this process's own, empty database.
docs/dashboard.md has the rest.
`

// options are fdbqueue ui's flags.
type options struct {
	dsn      string
	listen   string
	readOnly bool
	auth     authenticator
	interval time.Duration
}

// Main runs fdbqueue ui ARGS until ctx ends or an interrupt, and returns
// the exit status: 0, 1 when serving failed, 2 for bad arguments.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, err := parseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stderr, usage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "fdbqueue ui: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	if err := serve(ctx, o, stdout); err != nil {
		fmt.Fprintf(stderr, "fdbqueue ui: %v\n", err)
		return 1
	}
	return 0
}

func parseFlags(args []string) (options, error) {
	o := options{}
	fs := flag.NewFlagSet("fdbqueue ui", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "")
	fs.BoolVar(&o.readOnly, "read-only", false, "")
	auth := fs.String("auth", "", "")
	fs.DurationVar(&o.interval, "interval", ui.DefaultInterval, "")
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return o, err
			}
			return o, fmt.Errorf("%v (fdbqueue ui --help lists the flags)", err)
		}
		if fs.NArg() == 0 {
			break
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
	switch len(rest) {
	case 0:
		return o, errors.New("which database? usage: fdbqueue ui DSN [--listen 127.0.0.1:8080] [--read-only] [--auth token:SECRET | --auth basic:USER:PASS]")
	case 1:
		o.dsn = rest[0]
	default:
		return o, fmt.Errorf("one DSN, not %d arguments (%s)", len(rest), strings.Join(rest, " "))
	}
	var err error
	if o.auth, err = parseAuth(*auth); err != nil {
		return o, err
	}
	if o.interval < 100*time.Millisecond {
		return o, fmt.Errorf("--interval %v is below 100ms", o.interval)
	}
	if o.auth == nil {
		if err := needsNoAuth(o.listen); err != nil {
			return o, err
		}
	}
	return o, nil
}

// needsNoAuth returns why the address needs --auth: it is not a loopback
// address, so others may reach it.
func needsNoAuth(listen string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("--listen %q is not HOST:PORT (127.0.0.1:8080, say): %v", listen, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	what := "is not a loopback address"
	if host == "" {
		what = "listens on every interface"
	}
	return fmt.Errorf("--listen %s %s: anyone who reaches it could read the queues and change them. "+
		"Pass --auth token:SECRET or --auth basic:USER:PASS, or listen on 127.0.0.1", listen, what)
}

// serve serves the dashboard until ctx ends.
func serve(ctx context.Context, o options, stdout io.Writer) error {
	db, err := sql.Open("fdbqueue", o.dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = db.PingContext(pctx)
	cancel()
	if err != nil {
		return fmt.Errorf("opening %s: %v", o.dsn, err)
	}
	var uiOpts []ui.Option
	if o.readOnly {
		uiOpts = append(uiOpts, ui.ReadOnly())
	}
	uiOpts = append(uiOpts, ui.WithInterval(o.interval))
	d := ui.Handler(db, uiOpts...)
	defer d.Close()
	var h http.Handler = d
	if o.auth != nil {
		h = o.auth.wrap(d)
	} else {
		h = loopbackHostOnly(d)
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	if o.auth == nil && !isLoopback(ln.Addr()) {
		// A name (localhost) that resolved to another address than the
		// loopback's.
		ln.Close()
		return fmt.Errorf("--listen %s listens on %s, not a loopback address: anyone who reaches it could read the queues and change them. "+
			"Pass --auth token:SECRET or --auth basic:USER:PASS, or listen on 127.0.0.1", o.listen, ln.Addr())
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	url := "http://" + ln.Addr().String() + "/"
	mode := ""
	if o.readOnly {
		mode = ", read-only"
	}
	fmt.Fprintf(stdout, "fdbqueue ui: the dashboard of %s%s at %s%s\n", o.dsn, mode, url, urlAuthHint(o.auth))
	if strings.HasPrefix(o.dsn, "memory:") {
		fmt.Fprintln(stdout, "fdbqueue ui: memory: is this process's own database, empty: use a file: directory or fdb: to see an application's queues")
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// isLoopback says whether a listener's address is a loopback one.
func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// loopbackHostOnly refuses a request whose Host is not a loopback name or
// address, which a browser sends to a dashboard without --auth only from
// a page of another site whose name was rebound to 127.0.0.1 (DNS
// rebinding): that page would be same-origin with the dashboard, and
// could read it and act.
func loopbackHostOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			host = hh
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		ip := net.ParseIP(host)
		if !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
			http.Error(w, "this dashboard listens on a loopback address without --auth: it answers requests for localhost, 127.0.0.1 or [::1] only, not for "+clipHost(r.Host)+" (behind a reverse proxy, pass --auth)", http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// clipHost shortens a request's Host for an error message.
func clipHost(h string) string {
	if len(h) > 100 {
		return h[:100] + "..."
	}
	return h
}

// An authenticator checks the credentials of every request.
type authenticator interface {
	wrap(http.Handler) http.Handler
}

// parseAuth parses --auth: "" (none), token:SECRET, basic:USER:PASS, or
// env:VAR, whose value is one of those (a secret in the arguments is
// anyone's on the host who lists processes).
func parseAuth(s string) (authenticator, error) {
	if name, ok := strings.CutPrefix(s, "env:"); ok {
		v, set := os.LookupEnv(name)
		if name == "" || !set || v == "" {
			return nil, fmt.Errorf("--auth env:%s: the environment variable %s is not set; it holds token:SECRET or basic:USER:PASS", name, name)
		}
		if strings.HasPrefix(v, "env:") {
			return nil, fmt.Errorf("--auth env:%s: %s holds token:SECRET or basic:USER:PASS, not another env:", name, name)
		}
		a, err := parseAuth(v)
		if err != nil {
			return nil, fmt.Errorf("--auth env:%s: %v", name, err)
		}
		return a, nil
	}
	kind, rest, _ := strings.Cut(s, ":")
	switch {
	case s == "":
		return nil, nil
	case kind == "token" && len(rest) >= 8:
		return tokenAuth(rest), nil
	case kind == "token":
		return nil, errors.New("--auth token:SECRET takes a secret of at least 8 characters")
	case kind == "basic":
		user, pass, ok := strings.Cut(rest, ":")
		if !ok || user == "" || pass == "" {
			return nil, errors.New("--auth basic:USER:PASS takes a user and a password, both not empty")
		}
		return basicAuth{user, pass}, nil
	}
	return nil, fmt.Errorf("--auth %q: use token:SECRET, basic:USER:PASS or env:VAR", kind)
}

// tokenAuth takes the token from Authorization: Bearer, or from a
// cookie that ?token= sets.
type tokenAuth string

const tokenCookie = "fdbqueue_ui_token"

func (a tokenAuth) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query(); q.Has("token") {
			if !equal(q.Get("token"), string(a)) {
				unauthorized(w, "wrong token")
				return
			}
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: string(a), Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q.Del("token")
			u := *r.URL
			u.RawQuery = q.Encode()
			// One leading slash: //host and /\host name another site.
			to := "/" + strings.TrimLeft(u.RequestURI(), `/\`)
			http.Redirect(w, r, to, http.StatusSeeOther)
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			if c, err := r.Cookie(tokenCookie); err == nil {
				got = c.Value
			}
		}
		if !equal(got, string(a)) {
			unauthorized(w, "this dashboard needs its token: open the URL fdbqueue ui printed (with ?token=), or send Authorization: Bearer TOKEN")
			return
		}
		h.ServeHTTP(w, r)
	})
}

type basicAuth struct{ user, pass string }

func (a basicAuth) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if !ok || !equal(user, a.user) || !equal(pass, a.pass) {
			w.Header().Set("WWW-Authenticate", `Basic realm="fdbqueue", charset="UTF-8"`)
			unauthorized(w, "this dashboard needs a user and password (HTTP basic authentication)")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// equal compares a credential in constant time, its length too
// (subtle.ConstantTimeCompare answers at once for another length): it
// compares the strings' SHA-256 sums.
func equal(a, b string) bool {
	x, y := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(x[:], y[:]) == 1
}

func unauthorized(w http.ResponseWriter, why string) {
	http.Error(w, why, http.StatusUnauthorized)
}

// urlAuthHint is what the start line adds for the URL to work.
func urlAuthHint(a authenticator) string {
	switch a := a.(type) {
	case tokenAuth:
		return "?token=" + string(a)
	case basicAuth:
		return " (user " + a.user + ")"
	}
	return ""
}
