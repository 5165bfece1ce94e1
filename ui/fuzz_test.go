package ui_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fdbqueue/fdbqueue/ui"
)

// FuzzAPI sends the API any method, path, query and body, with the
// page's token and origin: whatever it is, the answer is JSON (or a
// redirect to the clean path), and no
// input is a server error (nor a panic, which fails the fuzzer). Seeded
// from TestBadInputGetsAClearError.
func FuzzAPI(f *testing.F) {
	for _, seed := range []struct{ method, path, body string }{
		{"GET", "/api/overview", ""},
		{"GET", "/api/overview?top=8", ""},
		{"GET", "/api/overview?table=jobs&top=x", ""},
		{"GET", "/api/tables/jobs_dead/rows?state=dead", ""},
		{"GET", "/api/tables/jobs", ""},
		{"GET", "/api/tables/jobs/rows?state=leased&limit=50&offset=0", ""},
		{"GET", "/api/tables/jobs/rows?id=99999999999999999999", ""},
		{"GET", "/api/tables/jobs/rows?offset=990&limit=50", ""},
		{"GET", "/api/tables/emails/rows?state=dead", ""},
		{"GET", "/api/tables/%00/rows", ""},
		{"POST", "/api/tables/jobs/actions/retry", `{"id": "1"}`},
		{"POST", "/api/tables/jobs/actions/delete", `{"id": "1", "dead": true}`},
		{"POST", "/api/tables/jobs/actions/release", `{"id": "1", "lease": "-1"}`},
		{"POST", "/api/tables/jobs/actions/purge", `{"id": "1"}`},
		{"POST", "/api/tables/jobs/actions/delete", `{"id": 1e400}`},
		{"PUT", "/api/tables/jobs/actions/delete", `[]`},
	} {
		f.Add(seed.method, seed.path, seed.body)
	}
	db := open(f, "memory:")
	seed(f, db)
	d := ui.Handler(db)
	f.Cleanup(func() { d.Close() })
	rec := httptest.NewRecorder()
	d.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	token := tokenMeta.FindStringSubmatch(rec.Body.String())[1]
	f.Fuzz(func(t *testing.T, method, target, body string) {
		if !strings.HasPrefix(target, "/api/") || strings.ContainsAny(target, " \t\r\n#") {
			return // not a request line the server would parse as an API call
		}
		switch method {
		case "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH":
		default:
			return
		}
		req, err := http.NewRequest(method, "http://dashboard.test"+target, strings.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Fdbqueue-Token", token)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		rec := httptest.NewRecorder()
		d.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", method, target, body, rec.Code, rec.Body)
		}
		redirect := rec.Code >= 300 && rec.Code < 400 // ServeMux cleans paths (/api/./x)
		if method != "HEAD" && !redirect && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %s %q: %d, not JSON: %s", method, target, body, rec.Code, rec.Body)
		}
	})
}
