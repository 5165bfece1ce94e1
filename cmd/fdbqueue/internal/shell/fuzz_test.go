package shell

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzSplitter: any text splits without panicking, fed whole or line by
// line (as the prompt feeds it) into the same statements, and every
// statement is non-empty, a meta-command one line starting with a
// backslash.
func FuzzSplitter(f *testing.F) {
	for _, seed := range []string{
		"SELECT 'a;b';\n-- x; y\nSELECT \"c;\" /* ; */ FROM t;\n\n  SELECT 1",
		"\\dt\n\\copy q FROM 'a b.csv'\nINSERT INTO q VALUES ('it''s');",
		"/* c */ \\d q\nSELECT 'a\\'';\n;;",
		"SELECT `x;y` FROM t; /* unterminated",
		"SELECT 'unterminated",
		"\\copy q FROM STDIN\nv\n\"a\n\\.\nb\"\n\\.\nSELECT 1;",
		"\\copy q FROM stdin\nv\nx\"y\n\\.\r\n\\copy q FROM STDIN",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		whole := newScriptSplitter()
		got := whole.feed(text)
		last, errWhole := whole.finish()
		if last != nil {
			got = append(got, *last)
		}
		lines := newScriptSplitter()
		var byLine []statement
		for _, l := range strings.SplitAfter(text, "\n") {
			byLine = append(byLine, lines.feed(l)...)
		}
		last, errLines := lines.finish()
		if last != nil {
			byLine = append(byLine, *last)
		}
		if (errWhole == nil) != (errLines == nil) {
			t.Fatalf("whole: %v, by line: %v", errWhole, errLines)
		}
		if errWhole != nil {
			return
		}
		if len(got) != len(byLine) {
			t.Fatalf("whole gives %d statements, by line %d:\n%+v\n%+v", len(got), len(byLine), got, byLine)
		}
		for i, st := range got {
			if st != byLine[i] {
				t.Fatalf("statement %d: whole %+v, by line %+v", i, st, byLine[i])
			}
			if strings.TrimSpace(st.text) == "" || st.line < 1 {
				t.Fatalf("empty statement or bad line: %+v", st)
			}
			if st.meta && (!strings.HasPrefix(st.text, `\`) || strings.Contains(st.text, "\n")) {
				t.Fatalf("meta-command %q", st.text)
			}
		}
	})
}

// FuzzMetaArg: any argument text gives a name or an error, never a panic,
// and a quoted name round-trips.
func FuzzMetaArg(f *testing.F) {
	for _, seed := range []string{"'a b.csv'", `"x""y"`, "plain.csv", "'open", "'a' b", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		_, _ = metaArg(name)
		if name == "" || strings.ContainsAny(name, "\n") {
			return
		}
		quoted := "'" + strings.ReplaceAll(name, "'", "''") + "'"
		got, err := metaArg(quoted)
		if err != nil || got != name {
			t.Fatalf("metaArg(%q) = %q, %v; want %q", quoted, got, err, name)
		}
	})
}

// FuzzCSV: any two records written by appendCSV read back the same, NULL
// and ” apart, from a file or as inline data in a script; and any text
// reads without a panic.
func FuzzCSV(f *testing.F) {
	for _, seed := range [][2]string{{"", ""}, {"a,b", `"q"`}, {"\\.", "x\n\\.\ny"}, {"\ufeffbom", " sp "}, {"\r\n", "\r"}} {
		f.Add(seed[0], seed[1], false, true)
	}
	f.Fuzz(func(t *testing.T, a, b string, nullA, nullB bool) {
		cell := func(s string, null bool) csvCell {
			if null {
				return csvCell{null: true}
			}
			return csvCell{value: s}
		}
		rec := []csvCell{cell(a, nullA), cell(b, nullB)}
		text := string(appendCSV(appendCSV(nil, rec), rec))
		check := func(from, data string) {
			rd := newCSVReader(strings.NewReader(data))
			for n := range 2 {
				got, _, err := rd.read()
				if err != nil {
					t.Fatalf("%s: record %d of %q: %v", from, n, data, err)
				}
				if len(got) != 2 {
					t.Fatalf("%s: record %d of %q: %d fields", from, n, data, len(got))
				}
				for i, c := range rec {
					if got[i].null() != c.null || got[i].value != c.value {
						t.Fatalf("%s: record %d field %d of %q: got %+v, want %+v", from, n, i, data, got[i], c)
					}
				}
			}
			if _, _, err := rd.read(); !errors.Is(err, io.EOF) {
				t.Fatalf("%s: after two records of %q: %v", from, data, err)
			}
		}
		check("file", text)

		sp := newScriptSplitter()
		stmts := sp.feed("\\copy q FROM STDIN\n" + text + "\\.\nSELECT 1;\n")
		if len(stmts) != 2 || stmts[0].data != text || stmts[1].text != "SELECT 1" {
			t.Fatalf("inline data %q split as %+v", text, stmts)
		}
		check("inline", stmts[0].data)

		// Any text: records or errors, never a panic or a loop.
		rd := newCSVReader(strings.NewReader(a + "\n" + b))
		for range len(a) + len(b) + 3 {
			if _, _, err := rd.read(); errors.Is(err, io.EOF) {
				return
			}
		}
		t.Fatalf("%q: more records than lines", a+"\n"+b)
	})
}
