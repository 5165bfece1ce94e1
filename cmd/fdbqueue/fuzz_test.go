package main

import (
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
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		whole := newSplitter()
		got := whole.feed(text)
		last, errWhole := whole.finish()
		if last != nil {
			got = append(got, *last)
		}
		lines := newSplitter()
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
