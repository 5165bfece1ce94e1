package shell

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestValueFormats prints every type, infinities, -0, integers past 2^53,
// NULL and ”, blobs, in every format; the script ends with a FOR POP of an
// infinity, which must print in JSON too. (NaN cannot be stored; a NaN
// stored by an older version prints as TestNaNPrints checks.)
func TestValueFormats(t *testing.T) {
	t.Parallel()
	for _, format := range formats {
		out, errs, code := shellRun(t, "", "--format", format, "-f", "testdata/values.sql")
		require.Equal(t, 0, code, errs)
		require.Equal(t, "CREATE\nINSERT 5\n", errs)
		golden(t, fmt.Sprintf("values.%s.out", format), out)
		switch format {
		case "json":
			for _, doc := range strings.SplitAfter(out, "]\n") {
				require.True(t, doc == "" || json.Valid([]byte(doc)), doc)
			}
		case "jsonl":
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				require.True(t, json.Valid([]byte(line)), line)
			}
		}
	}
}

func TestJSONInts(t *testing.T) {
	t.Parallel()
	args := func(mode string) []string {
		return []string{"--format", "jsonl", "--json-ints", mode,
			"-c", "CREATE TABLE q (i BIGINT)",
			"-c", "INSERT INTO q VALUES (9007199254740992), (-9007199254740993), (7)",
			"-c", "SELECT i FROM q"}
	}
	for mode, want := range map[string]string{
		"auto":   `{"i":"9007199254740992"}` + "\n" + `{"i":"-9007199254740993"}` + "\n" + `{"i":"7"}` + "\n",
		"string": `{"i":"9007199254740992"}` + "\n" + `{"i":"-9007199254740993"}` + "\n" + `{"i":"7"}` + "\n",
		"number": `{"i":9007199254740992}` + "\n" + `{"i":-9007199254740993}` + "\n" + `{"i":7}` + "\n",
	} {
		out, errs, code := shellRun(t, "", args(mode)...)
		require.Equal(t, 0, code, errs)
		require.Equal(t, want, out, mode)
	}
	// Under auto a column keeps one type in a result: numbers while every
	// integer in it is exact in a double, strings as soon as one is not.
	out, errs, code := shellRun(t, "", "--format", "jsonl",
		"-c", "CREATE TABLE q (small BIGINT, big BIGINT)",
		"-c", "INSERT INTO q VALUES (1, 2), (9007199254740992, 9007199254740993)",
		"-c", "SELECT small, big FROM q")
	require.Equal(t, 0, code, errs)
	require.Equal(t, `{"small":1,"big":"2"}`+"\n"+`{"small":9007199254740992,"big":"9007199254740993"}`+"\n", out)
	_, errs, code = shellRun(t, "", args("bigint")...)
	require.Equal(t, 2, code)
	require.Contains(t, errs, `fdbqueue: unknown --json-ints "bigint" (modes: auto, string, number)`)

	// Ids are 63-bit: exact in every mode.
	out, errs, code = shellRun(t, "", "--format", "jsonl", "-c", "CREATE TABLE q (v TEXT)", "-c", "INSERT INTO q VALUES ('a')", "-c", "SELECT id FROM q")
	require.Equal(t, 0, code, errs)
	require.Regexp(t, `^\{"id":("\d+"|\d{1,16})\}\n$`, out)
}

// failingWriter fails every write, as a full disk or a closed pipe does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestPoppedRowsSurviveAFailedWrite: when the result of a FOR POP cannot be
// written, the rows it removed go to the messages, not nowhere.
func TestPoppedRowsSurviveAFailedWrite(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("fdbqueue", "memory:")
	require.NoError(t, err)
	defer db.Close()
	conn, err := db.Conn(context.Background())
	require.NoError(t, err)
	defer conn.Close()
	var msg bytes.Buffer
	sh := &shell{ctx: context.Background(), conn: conn, out: failingWriter{}, msg: &msg, format: printer{format: "jsonl", jsonInts: "auto"}, opts: &options{}}
	for _, q := range []string{"CREATE TABLE q (v TEXT, f DOUBLE)", "INSERT INTO q VALUES ('precious', '-Infinity'), ('kept', 1)"} {
		require.NoError(t, sh.exec(q))
	}
	err = sh.exec("SELECT v, f FROM q LIMIT 1 for  pop")
	require.ErrorContains(t, err, "writing the result: no space left on device")
	require.Contains(t, msg.String(), "the rows FOR POP removed are:\n"+`{"v":"precious","f":"-Infinity"}`+"\n")

	// A plain SELECT removes nothing: its rows are not repeated.
	msg.Reset()
	require.Error(t, sh.exec("SELECT v FROM q"))
	require.NotContains(t, msg.String(), "kept")
}

func TestTableShowsBlobs(t *testing.T) {
	t.Parallel()
	out := string(printer{}.render([]string{"b"}, [][]any{
		{[]byte("text")}, {[]byte{0, 0xff}}, {[]byte(`\x41`)}, {[]byte("tab\tok")}, {[]byte("bell\a")}, {[]byte{}},
	}))
	// Printable text as text; bytes, control characters and text that
	// would read as hex as hex.
	require.Equal(t, []string{"b", "------------", "text", `\x00ff`, `\x5c783431`, "tab\tok", `\x62656c6c07`, "", "(6 rows)", "", ""}, strings.Split(out, "\n"))
}

// TestNaNPrints: DOUBLE columns refuse NaN, but a NaN stored by an older
// version can still reach the shell, and every format prints it.
func TestNaNPrints(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"table": "NaN", "csv": "NaN\n", "json": `"f": "NaN"`, "jsonl": `{"f":"NaN"}`,
	}
	for _, format := range formats {
		p, err := newPrinter(format, "auto")
		require.NoError(t, err)
		out := string(p.render([]string{"f"}, [][]any{{math.NaN()}}))
		require.Contains(t, out, want[format], format)
	}
}

// TestTableAlignsWideCharacters: CJK and emoji take two columns on a
// terminal; the table pads by display width, not by runes.
func TestTableAlignsWideCharacters(t *testing.T) {
	t.Parallel()
	out := string(printer{}.render([]string{"名前", "n"}, [][]any{{"日本語", int64(1)}, {"ab", int64(22)}, {"🔥", int64(3)}}))
	require.Equal(t, []string{"名前   | n", "-------+---", "日本語 | 1", "ab     | 22", "🔥     | 3", "(3 rows)", "", ""}, strings.Split(out, "\n"))
}
