package uicmd_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/cmd/fdbqueue/internal/uicmd"
	_ "github.com/fdbqueue/fdbqueue/driver"
)

func TestBadFlagsSayWhatToPass(t *testing.T) {
	t.Parallel()
	for args, says := range map[string]string{
		"":                                        "which database?",
		"memory: --listen 0.0.0.0:8080":           "--listen 0.0.0.0:8080 is not a loopback address: anyone who reaches it could read the queues and change them. Pass --auth token:SECRET or --auth basic:USER:PASS, or listen on 127.0.0.1",
		"memory: --listen :8080":                  "--listen :8080 listens on every interface",
		"memory: --listen example.com:80":         "is not a loopback address",
		"memory: --listen [::]:8080":              "--listen [::]:8080 is not a loopback address",
		"memory: --listen [::ffff:10.0.0.1]:8080": "is not a loopback address",
		"memory: --listen 10.0.0.5:8080":          "is not a loopback address",
		"memory: --listen 8080":                   `--listen "8080" is not HOST:PORT`,
		"memory: --auth token:short":              "at least 8 characters",
		"memory: --auth basic:ada":                "--auth basic:USER:PASS takes a user and a password",
		"memory: --auth oauth:x":                  `--auth "oauth": use token:SECRET, basic:USER:PASS or env:VAR`,
		"memory: file:/x":                         "one DSN, not 2 arguments",
		"memory: --bogus":                         "flag provided but not defined: -bogus (fdbqueue ui --help lists the flags)",
		"memory: --interval 1ms":                  "--interval 1ms is below 100ms",
	} {
		var stdout, stderr bytes.Buffer
		status := uicmd.Main(context.Background(), strings.Fields(args), nil, &stdout, &stderr)
		require.Equal(t, 2, status, args)
		require.Contains(t, stderr.String(), says, args)
	}
	var stderr bytes.Buffer
	require.Zero(t, uicmd.Main(context.Background(), []string{"--help"}, nil, io.Discard, &stderr))
	require.Contains(t, stderr.String(), "usage: fdbqueue ui DSN")
}

// start runs fdbqueue ui ARGS until the test ends, and returns the URL it
// printed.
func start(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		done <- uicmd.Main(ctx, append(args, "--listen", "127.0.0.1:0"), nil, w, &stderr)
		w.Close()
	}()
	t.Cleanup(func() {
		cancel()
		require.Zero(t, <-done, "fdbqueue ui: %s", stderr.String())
	})
	sc := bufio.NewScanner(r)
	require.True(t, sc.Scan(), "fdbqueue ui printed nothing: %s", stderr.String())
	m := regexp.MustCompile(`at (http://\S+)`).FindStringSubmatch(sc.Text())
	require.NotNil(t, m, sc.Text())
	go func() { _, _ = io.Copy(io.Discard, r) }()
	return m[1]
}

func status(t *testing.T, c *http.Client, req *http.Request) int {
	t.Helper()
	res, err := c.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	return res.StatusCode
}

// TestAuthFromTheEnvironment: --auth env:VAR takes the credentials from
// VAR, out of the process list. Not parallel: it sets the environment.
func TestAuthFromTheEnvironment(t *testing.T) {
	t.Setenv("FDBQUEUE_TEST_UI_AUTH", "basic:ada:lovelace")
	t.Setenv("FDBQUEUE_TEST_UI_SHORT", "token:short")
	url := start(t, "memory:", "--auth", "env:FDBQUEUE_TEST_UI_AUTH")
	req, err := http.NewRequest("GET", url+"api/overview", nil)
	require.NoError(t, err)
	require.Equal(t, 401, status(t, http.DefaultClient, req))
	req.SetBasicAuth("ada", "lovelace")
	require.Equal(t, 200, status(t, http.DefaultClient, req))
	for args, says := range map[string]string{
		"memory: --auth env:FDBQUEUE_TEST_UI_UNSET": "--auth env:FDBQUEUE_TEST_UI_UNSET: the environment variable FDBQUEUE_TEST_UI_UNSET is not set",
		"memory: --auth env:FDBQUEUE_TEST_UI_SHORT": "--auth env:FDBQUEUE_TEST_UI_SHORT: --auth token:SECRET takes a secret of at least 8 characters",
		"memory: --auth env: --listen 0.0.0.0:8080": "the environment variable  is not set",
	} {
		var stderr bytes.Buffer
		require.Equal(t, 2, uicmd.Main(context.Background(), strings.Fields(args), nil, io.Discard, &stderr), args)
		require.Contains(t, stderr.String(), says, args)
	}
}

// noFollowClient returns redirects instead of following them.
func noFollowClient() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	// A non-loopback address with --auth is accepted; this test serves on
	// loopback, with the same checks.
	url := start(t, "memory:", "--auth", "token:s3cret-token")
	base := strings.TrimSuffix(url, "?token=s3cret-token")
	require.Equal(t, base+"?token=s3cret-token", url)
	get := func(path string) *http.Request {
		req, err := http.NewRequest("GET", base+path, nil)
		require.NoError(t, err)
		return req
	}
	require.Equal(t, 401, status(t, http.DefaultClient, get("api/overview")))
	req := get("api/overview")
	req.Header.Set("Authorization", "Bearer wrong-token")
	require.Equal(t, 401, status(t, http.DefaultClient, req))
	req = get("api/overview")
	req.Header.Set("Authorization", "Bearer s3cret-token")
	require.Equal(t, 200, status(t, http.DefaultClient, req))
	// The URL it printed sets a cookie, and leads to the page.
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &http.Client{Jar: jar}
	res, err := browser.Get(url)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, base, res.Request.URL.String(), "the token is gone from the address bar")
	require.Equal(t, 200, status(t, browser, get("api/overview")))

	// The cookie is out of scripts' reach and other sites' requests.
	res, err = noFollowClient().Get(url)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/", res.Header.Get("Location"), "the token is out of the address, and of the history")
	cookie := res.Header.Get("Set-Cookie")
	for _, attr := range []string{"HttpOnly", "SameSite=Strict", "Path=/"} {
		require.Contains(t, cookie, attr)
	}

	// The redirect that drops the token stays on this server, whatever
	// the path: //host and /\host are other sites' to a browser.
	noFollow := noFollowClient()
	for _, path := range []string{"/evil.example/x?token=s3cret-token&a=1", `/\evil.example/?token=s3cret-token`} {
		req := get(path)
		res, err := noFollow.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusSeeOther, res.StatusCode, path)
		loc := res.Header.Get("Location")
		require.True(t, strings.HasPrefix(loc, "/") && !strings.HasPrefix(loc, "//") && !strings.HasPrefix(loc, `/\`), "%s redirects to %s", path, loc)
		require.NotContains(t, loc, "token")
	}

	basic := start(t, "memory:", "--auth", "basic:ada:lovelace", "--read-only")
	req, err = http.NewRequest("GET", basic+"api/overview", nil)
	require.NoError(t, err)
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 401, res.StatusCode)
	require.Contains(t, res.Header.Get("WWW-Authenticate"), "Basic")
	req.SetBasicAuth("ada", "babbage")
	require.Equal(t, 401, status(t, http.DefaultClient, req))
	req.SetBasicAuth("ada", "lovelace")
	require.Equal(t, 200, status(t, http.DefaultClient, req))
}

// TestNoAuthAnswersLoopbackNamesOnly: without --auth, a request for
// another host name is refused. A browser sends one from a page of
// another site whose name now resolves to 127.0.0.1 (DNS rebinding),
// which could otherwise read the page, its token, and act.
func TestNoAuthAnswersLoopbackNamesOnly(t *testing.T) {
	t.Parallel()
	url := start(t, "memory:")
	for host, want := range map[string]int{
		"":                       200, // the URL's own, 127.0.0.1:PORT
		"localhost:8080":         200,
		"LocalHost":              200,
		"[::1]:8080":             200,
		"127.0.0.2":              200,
		"evil.example:8080":      http.StatusMisdirectedRequest,
		"evil.example":           http.StatusMisdirectedRequest,
		"localhost.evil.example": http.StatusMisdirectedRequest,
		"10.0.0.5:8080":          http.StatusMisdirectedRequest,
	} {
		for _, path := range []string{"", "api/overview"} {
			req, err := http.NewRequest("GET", url+path, nil)
			require.NoError(t, err)
			if host != "" {
				req.Host = host
			}
			require.Equal(t, want, status(t, http.DefaultClient, req), "Host %s, %s", host, path)
		}
	}
	// With --auth it answers any name: others reach it by theirs, and a
	// rebound page has no credentials.
	authed := start(t, "memory:", "--auth", "basic:ada:lovelace")
	req, err := http.NewRequest("GET", authed+"api/overview", nil)
	require.NoError(t, err)
	req.Host = "dashboard.example:8080"
	req.SetBasicAuth("ada", "lovelace")
	require.Equal(t, 200, status(t, http.DefaultClient, req))
}

// appChild is the application of TestBesideAnApplication, in a process of
// its own on the file: database FDBQUEUE_UI_APP_DIR: it creates q, pushes
// 3 rows, prints "ready", then runs what its standard input says: "push
// N" pushes N rows, "count" prints the rows of q.
func appChild(dir string) {
	db, err := sql.Open("fdbqueue", "file:"+dir)
	if err == nil {
		_, err = db.Exec(`CREATE TABLE q (v INT NOT NULL)`)
	}
	if err == nil {
		_, err = db.Exec(`INSERT INTO q (v) VALUES (1), (2), (3)`)
	}
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println("ready")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var n int
		switch f := strings.Fields(sc.Text()); f[0] {
		case "push":
			fmt.Sscan(f[1], &n)
			for i := range n {
				if _, err := db.Exec(`INSERT INTO q (v) VALUES (?)`, 10+i); err != nil {
					fmt.Println("error", err)
				}
			}
			fmt.Println("pushed")
		case "count":
			if err := db.QueryRow(`SELECT COUNT(*) FROM q`).Scan(&n); err != nil {
				fmt.Println("error", err)
			}
			fmt.Println("count", n)
		}
	}
	db.Close()
}

// TestBesideAnApplication runs fdbqueue ui on the file: database of an
// application in another process: it shows what the application pushes,
// and its actions reach the application.
func TestBesideAnApplication(t *testing.T) {
	if dir := os.Getenv("FDBQUEUE_UI_APP_DIR"); dir != "" {
		appChild(dir)
		return
	}
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBesideAnApplication$")
	cmd.Env = append(os.Environ(), "FDBQUEUE_UI_APP_DIR="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		stdin.Close()
		require.NoError(t, cmd.Wait())
	})
	lines := bufio.NewScanner(stdout)
	next := func() string {
		require.True(t, lines.Scan(), "the application ended")
		require.NotContains(t, lines.Text(), "error")
		return lines.Text()
	}
	require.Equal(t, "ready", next())

	url := start(t, "file:"+dir)
	overview := func() map[string]any {
		res, err := http.Get(url + "api/overview")
		require.NoError(t, err)
		defer res.Body.Close()
		var o struct{ Tables []map[string]any }
		require.NoError(t, json.NewDecoder(res.Body).Decode(&o))
		for _, q := range o.Tables {
			if q["name"] == "q" {
				return q
			}
		}
		t.Fatalf("no table q in %v", o.Tables)
		return nil
	}
	require.EqualValues(t, 3, overview()["rows"])
	fmt.Fprintln(stdin, "push 2")
	require.Equal(t, "pushed", next())
	require.EqualValues(t, 5, overview()["rows"])
	require.EqualValues(t, 5, overview()["pushed"])

	// Delete a row from the dashboard, as its page does.
	res, err := http.Get(url)
	require.NoError(t, err)
	page, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	token := regexp.MustCompile(`name="fdbqueue-token" content="([0-9a-f]+)"`).FindSubmatch(page)[1]
	res, err = http.Get(url + "api/tables/q/rows?limit=1")
	require.NoError(t, err)
	var rows struct{ Rows [][]any }
	require.NoError(t, json.NewDecoder(res.Body).Decode(&rows))
	res.Body.Close()
	req, err := http.NewRequest("POST", url+"api/tables/q/actions/delete", strings.NewReader(fmt.Sprintf(`{"id": %q}`, rows.Rows[0][0])))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Fdbqueue-Token", string(token))
	require.Equal(t, 200, status(t, http.DefaultClient, req))
	fmt.Fprintln(stdin, "count")
	require.Equal(t, "count 4", next())
}
