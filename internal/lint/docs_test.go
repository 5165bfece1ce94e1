package lint

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The documents under test, as pebble's internal/lint puts the code's shape
// under test: every repository path and every Go name that the README,
// docs/, a command's README or a package comment mentions exists; every
// relative link leads to a file and a heading that exist; each package's
// "# Files" list names exactly its files; and the key tables agree with
// queues/layout.go and exec/keys.go. Each test lists every drift it finds.

// requireNone fails with every drift found, one a line.
func requireNone(t *testing.T, drifts []string, what string) {
	t.Helper()
	slices.Sort(drifts)
	drifts = slices.Compact(drifts)
	require.Empty(t, drifts, "%s:\n%s", what, strings.Join(drifts, "\n"))
}

// pathExtensions are the extensions that make a word without a slash a
// file name: the repository's sources and documents.
var pathExtensions = []string{".go", ".md", ".sh", ".c", ".h", ".yml", ".test"}

// notPaths are, by document, the words that look like repository paths
// but name another project's files.
var notPaths = map[string][]string{
	// The bindings' files the contract follows.
	"package comment of kv": {"database.go", "transaction.go", "snapshot.go", "range.go"},
	// The upstream file iso.go comes from.
	"package comment of internal/btree": {"map.go"},
}

var lineRef = regexp.MustCompile(`:\d+(-\d+)?$`)

// pathWord cuts a word down to the repository path it may be, or returns
// "" when it is none: it drops the punctuation around it, a "./" before it
// and a line reference after it (exec/plan.go:52), and returns "" for a
// DSN, a URL, an absolute or home path, a flag, a variable, a Go package
// pattern (./...) and anything else with characters no path here has.
func pathWord(w string) string {
	w = strings.TrimLeft(w, "([\"'")
	w = strings.TrimSuffix(w, "'s")
	w = strings.TrimRight(w, ")]\"'.,;:!?")
	w = strings.TrimSuffix(w, "'s")
	w = lineRef.ReplaceAllString(w, "")
	w = strings.TrimPrefix(w, "./")
	switch {
	case w == "" || strings.Contains(w, "..."):
		return ""
	case strings.ContainsAny(w, ":=$@%`<>|{}()\\,"):
		return ""
	case strings.HasPrefix(w, "/") || strings.HasPrefix(w, "~") || strings.HasPrefix(w, "-"):
		return ""
	}
	return w
}

// isPath reports whether a word (cut by pathWord) names a repository path
// as seen from directory dir: it has a slash and starts with an entry of
// the root (or of dir, or testdata), or, if bare names count, it has no
// slash and a source's or document's extension. Bare names do not count in
// code blocks, which name the reader's files (script.sql) as well as the
// repository's.
func (r *repo) isPath(w, dir string, bare bool) bool {
	first, _, slash := strings.Cut(w, "/")
	if slash {
		if first == "testdata" || r.exists(first) {
			return true
		}
		return dir != "" && r.exists(path.Join(dir, first))
	}
	if !bare {
		return false
	}
	for _, ext := range pathExtensions {
		if strings.HasSuffix(w, ext) && len(w) > len(ext) {
			return true
		}
	}
	return false
}

// exists reports whether a slash path (a glob is allowed) names a file or
// a directory of the repository.
func (r *repo) exists(p string) bool {
	p = strings.TrimSuffix(p, "/")
	if r.files[p] || r.dirs[p] {
		return true
	}
	if !strings.ContainsAny(p, "*?[") {
		return false
	}
	for f := range r.files {
		if ok, _ := path.Match(p, f); ok {
			return true
		}
	}
	return false
}

// resolves reports whether a path word names something that exists: from
// the root, from dir, or for a bare name anywhere in the tree.
func (r *repo) resolves(w, dir string) bool {
	if r.exists(w) || r.exists(path.Join(dir, w)) {
		return true
	}
	if strings.Contains(w, "/") {
		return false
	}
	for b := range r.base {
		if ok, _ := path.Match(w, b); ok {
			return true
		}
	}
	return false
}

// pathsIn returns the words of a document that name repository paths,
// with whether each came from a code block.
func pathsIn(d doc, m *markdown) (words []string, inBlock []bool) {
	add := func(text string, block bool) {
		for _, w := range strings.Fields(text) {
			words = append(words, w)
			inBlock = append(inBlock, block)
		}
	}
	if !d.md {
		add(d.text, false)
		return words, inBlock
	}
	for _, s := range m.spans {
		add(s, false)
	}
	for _, b := range m.blocks {
		add(b, true)
	}
	return words, inBlock
}

func TestDocsNamePathsThatExist(t *testing.T) {
	t.Parallel()
	r := theRepo(t)
	var drifts []string
	checked := 0
	for _, d := range r.docs {
		words, inBlock := pathsIn(d, r.md[d.name])
		for i, w := range words {
			p := pathWord(w)
			if p == "" || slices.Contains(notPaths[d.name], p) || !r.isPath(p, d.dir, !inBlock[i]) {
				continue
			}
			if d.comments && !strings.HasSuffix(p, ".md") {
				continue // a comment's other paths are its code's business
			}
			checked++
			if !r.resolves(p, d.dir) {
				drifts = append(drifts, fmt.Sprintf("%s: %q does not exist", d.name, p))
			}
		}
	}
	t.Logf("%d paths checked", checked)
	require.NotZero(t, checked, "no paths found in the documents: is the test looking in the right place?")
	requireNone(t, drifts, "paths named in the documents that are not in the repository")
}

// otherPackages are the packages outside the module whose names the
// module's packages share, and whose names documents also use:
// database/sql/driver (driver.ErrBadConn), os/exec, go/parser.
var otherPackages = map[string]string{
	"driver": "database/sql/driver",
	"exec":   "os/exec",
	"parser": "go/parser",
}

// otherNames are names of packages that are neither the module's nor the
// standard library's, written in the documents with a module package's
// name: the FoundationDB bindings' fdb package.
var otherNames = map[string]bool{
	"fdb.Key": true,
}

// stdPkgs holds the standard library packages parsed: import path -> *pkg.
var stdPkgs sync.Map

// stdPkg parses a standard library package's non-test files, once.
func stdPkg(t *testing.T, importPath string) *pkg {
	if p, ok := stdPkgs.Load(importPath); ok {
		return p.(*pkg)
	}
	dir := filepath.Join(build.Default.GOROOT, "src", filepath.FromSlash(importPath))
	p := &pkg{decls: map[string]bool{}, members: map[string]map[string]bool{}, fileSet: token.NewFileSet()}
	pkgs, err := parser.ParseDir(p.fileSet, dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.SkipObjectResolution)
	require.NoError(t, err, "parsing %s", importPath)
	for _, ap := range pkgs {
		for _, f := range ap.Files {
			p.collect(f)
		}
	}
	stdPkgs.Store(importPath, p)
	return p
}

// has reports whether a package declares name, and member on it when
// member is not empty: a method, a field, or an interface's method, also
// one of a type it embeds.
func (p *pkg) has(name, member string) bool {
	if !p.decls[name] {
		return false
	}
	if member == "" || p.members[name] == nil {
		return true
	}
	seen := map[string]bool{}
	var find func(typ string) bool
	find = func(typ string) bool {
		if seen[typ] {
			return false
		}
		seen[typ] = true
		ms := p.members[typ]
		if ms[member] {
			return true
		}
		for m := range ms {
			if p.members[m] != nil && find(m) {
				return true
			}
		}
		return false
	}
	return find(name)
}

// identifiers matches pkg.Name and pkg.Name.Member for the module's
// package names; the pattern is built from the names found.
func identifiers(names []string) *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[^\w./-])(` + strings.Join(names, "|") + `)\.([A-Z]\w*)(?:\.([A-Za-z_]\w*))?`)
}

func TestDocsNameGoIdentifiersThatExist(t *testing.T) {
	t.Parallel()
	r := theRepo(t)
	var names []string
	for n := range r.names {
		if n != "main" {
			names = append(names, regexp.QuoteMeta(n))
		}
	}
	slices.Sort(names)
	re := identifiers(names)
	var drifts []string
	checked := 0
	for _, d := range r.docs {
		if d.comments {
			continue
		}
		for _, m := range re.FindAllStringSubmatch(d.text, -1) {
			checked++
			pkgName, name, member := m[1], m[2], m[3]
			found := otherNames[pkgName+"."+name]
			for _, p := range r.names[pkgName] {
				found = found || p.has(name, member)
				// A plural in prose: "the *kv.Errors of its tree".
				found = found || member == "" && strings.HasSuffix(name, "s") && p.has(strings.TrimSuffix(name, "s"), "")
			}
			if std, ok := otherPackages[pkgName]; ok && !found {
				found = stdPkg(t, std).has(name, member)
			}
			if !found {
				ident := pkgName + "." + name
				if member != "" {
					ident += "." + member
				}
				drifts = append(drifts, fmt.Sprintf("%s: %s is not declared", d.name, ident))
			}
		}
	}
	t.Logf("%d names checked", checked)
	require.NotZero(t, checked, "no Go names found in the documents: is the test looking in the right place?")
	requireNone(t, drifts, "Go names in the documents that the packages do not declare")
}

var goFile = regexp.MustCompile(`[\w*.-]+\.go\b`)

// filesList returns the file names and patterns of a package comment's
// "# Files" section, or nil when it has none.
func filesList(doc string) []string {
	var list []string
	in := false
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case line == "# Files":
			in = true
			continue
		case strings.HasPrefix(line, "# "):
			in = false
		}
		if in {
			list = append(list, goFile.FindAllString(line, -1)...)
		}
	}
	return list
}

func TestFilesListsMatchPackages(t *testing.T) {
	t.Parallel()
	r := theRepo(t)
	var drifts []string
	lists := 0
	for dir, p := range r.pkgs {
		list := filesList(p.doc)
		if list == nil {
			continue
		}
		lists++
		covered := map[string]bool{"doc.go": true}
		for _, pat := range list {
			n := 0
			for _, f := range p.files {
				if ok, _ := path.Match(pat, f); ok {
					covered[f] = true
					n++
				}
			}
			if n == 0 {
				drifts = append(drifts, fmt.Sprintf("%s: # Files lists %s, which is not one of its files", dir, pat))
			}
		}
		for _, f := range p.files {
			if !covered[f] {
				drifts = append(drifts, fmt.Sprintf("%s: # Files does not list %s", dir, f))
			}
		}
	}
	require.NotZero(t, lists, "no package comment has a # Files section: is the test looking in the right place?")
	requireNone(t, drifts, "# Files lists that do not match their packages' files")
}

var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	r := theRepo(t)
	var drifts []string
	checked := 0
	for _, d := range r.docs {
		if !d.md {
			continue
		}
		for _, target := range r.md[d.name].links {
			checked++
			if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
				continue
			}
			p, anchor, _ := strings.Cut(target, "#")
			file := d.name
			if p != "" {
				file = path.Clean(path.Join(d.dir, p))
			}
			switch {
			case file == ".." || strings.HasPrefix(file, "../"):
				drifts = append(drifts, fmt.Sprintf("%s: %s leads outside the repository", d.name, target))
				continue
			case !r.exists(file):
				drifts = append(drifts, fmt.Sprintf("%s: %s: no such file", d.name, target))
				continue
			case anchor == "":
				continue
			}
			m, ok := r.md[file]
			if !ok && strings.HasSuffix(file, ".md") {
				m = parseMarkdownFile(t, r, file)
				ok = true
			}
			switch {
			case !ok:
				drifts = append(drifts, fmt.Sprintf("%s: %s: an anchor into a file that is not Markdown", d.name, target))
			case !m.anchors[anchor]:
				drifts = append(drifts, fmt.Sprintf("%s: %s: %s has no heading #%s", d.name, target, file, anchor))
			}
		}
	}
	t.Logf("%d links checked", checked)
	require.NotZero(t, checked, "no links found in the documents: is the test looking in the right place?")
	requireNone(t, drifts, "links in the documents that lead nowhere")
}

// parseMarkdownFile parses a Markdown file that is not a checked
// document, for a link's anchor into it.
func parseMarkdownFile(t *testing.T, r *repo, file string) *markdown {
	b, err := readFile(r, file)
	require.NoError(t, err)
	return parseMarkdown(b)
}

// The key tables: the documents that lay out the keys (a table row is a
// line that starts with a key written as a tuple) against the constants
// that make them.

var (
	// A queue's key in a document: ("fdbqueue", "t", table_id, tag...).
	queueKey = regexp.MustCompile(`^\s*\("fdbqueue", "t", table_id, `)
	// A catalog key in a document: ("fdbqueue", "tag"... or root ("tag"...
	catalogKey = regexp.MustCompile(`^\s*(?:\("fdbqueue", |root \()"`)
	// Every tag a catalog row names.
	catalogTag = regexp.MustCompile(`(?:\("fdbqueue", |root \()"([^"]+)"`)
	// A tuple in a row's key.
	tupleRe = regexp.MustCompile(`\(([^()]*)\)`)
	// A tag and what follows it: 9, 9..., 13.
	tagElem = regexp.MustCompile(`^(\d+)(\.\.\.)?$`)
)

// queueRow is one key shape of a queue: its tag, and the elements after
// the tag, normalised ("priority,seq,id"; "..." for any).
type queueRow struct {
	tag   int
	elems string
}

// keyPart is a table row's key: what comes before its value ("->") or,
// in layout.go's table, before the first run of spaces.
func keyPart(line string) string {
	line = strings.TrimSpace(line)
	if k, _, ok := strings.Cut(line, "->"); ok {
		return k
	}
	if i := strings.Index(line, "  "); i >= 0 {
		return line[:i]
	}
	return line
}

// expand returns a row's elements with its optional ones ("[priority,]")
// both left out and kept.
func expand(elems string) []string {
	i := strings.Index(elems, "[")
	j := strings.Index(elems, "]")
	if i < 0 || j < i {
		return []string{elems}
	}
	opt := elems[i+1 : j]
	var out []string
	for _, rest := range expand(elems[j+1:]) {
		out = append(out, elems[:i]+rest, elems[:i]+opt+rest)
	}
	return out
}

// parseQueueRow reads the key shapes of one row: ("fdbqueue", "t",
// table_id, 9...), (..., 10...) is two. prefix is how many elements come
// before the tag in the row's first tuple.
func parseQueueRow(key string, prefix int) ([]queueRow, error) {
	var rows []queueRow
	for i, m := range tupleRe.FindAllStringSubmatch(key, -1) {
		var elems []string
		for _, e := range strings.Split(m[1], ",") {
			elems = append(elems, strings.TrimSpace(e))
		}
		switch {
		case i == 0 && len(elems) > prefix:
			elems = elems[prefix:]
		case i > 0 && len(elems) > 1 && elems[0] == "...":
			elems = elems[1:] // (..., 10...): the first tuple's prefix
		case i > 0 && prefix == 0:
		default:
			return nil, fmt.Errorf("cannot read the key %q", key)
		}
		tm := tagElem.FindStringSubmatch(elems[0])
		if tm == nil {
			return nil, fmt.Errorf("no tag in the key %q", key)
		}
		var tag int
		fmt.Sscan(tm[1], &tag)
		rest := strings.Join(elems[1:], ",")
		if tm[2] != "" {
			rest = "..."
		}
		rows = append(rows, queueRow{tag, strings.ReplaceAll(rest, " ", "")})
	}
	return rows, nil
}

// layout reads queues/layout.go: its tag constants (name -> value), their
// count (numTags), and its table's key shapes by tag.
func layout(t *testing.T, r *repo) (consts map[string]int, numTags int, table map[int]map[string]bool) {
	p := r.pkgs["queues"]
	require.NotNil(t, p, "no queues package")
	f := p.asts["layout.go"]
	require.NotNil(t, f, "no queues/layout.go")
	consts = map[string]int{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				if v, ok := intValue(vs.Values[i], consts); ok && (strings.HasPrefix(n.Name, "tag") || n.Name == "numTags") {
					consts[n.Name] = v
				}
			}
		}
	}
	numTags, ok := consts["numTags"]
	require.True(t, ok, "queues/layout.go declares no numTags")
	delete(consts, "numTags")

	table = map[int]map[string]bool{}
	var comment string
	for _, c := range f.Comments {
		if strings.Contains(c.Text(), "The key layout") {
			comment = c.Text()
		}
	}
	require.NotEmpty(t, comment, "queues/layout.go has no key layout comment")
	for _, line := range strings.Split(comment, "\n") {
		if !strings.HasPrefix(line, "\tP (") { // the table is a code block; prose also says P (x)
			continue
		}
		key := strings.ReplaceAll(keyPart(line), "P (", "(")
		rows, err := parseQueueRow(key, 0)
		require.NoError(t, err, "queues/layout.go")
		for _, row := range rows {
			if table[row.tag] == nil {
				table[row.tag] = map[string]bool{}
			}
			table[row.tag][row.elems] = true
		}
	}
	return consts, numTags, table
}

// intValue evaluates an integer constant expression of literals, known
// constants and + or -.
func intValue(e ast.Expr, known map[string]int) (int, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		var v int
		if e.Kind != token.INT {
			return 0, false
		}
		_, err := fmt.Sscan(e.Value, &v)
		return v, err == nil
	case *ast.Ident:
		v, ok := known[e.Name]
		return v, ok
	case *ast.ParenExpr:
		return intValue(e.X, known)
	case *ast.BinaryExpr:
		x, ok1 := intValue(e.X, known)
		y, ok2 := intValue(e.Y, known)
		switch {
		case !ok1 || !ok2:
			return 0, false
		case e.Op == token.ADD:
			return x + y, true
		case e.Op == token.SUB:
			return x - y, true
		}
	}
	return 0, false
}

// catalogTags reads exec/keys.go's string tags.
func catalogTags(t *testing.T, r *repo) map[string]bool {
	p := r.pkgs["exec"]
	require.NotNil(t, p, "no exec package")
	f := p.asts["keys.go"]
	require.NotNil(t, f, "no exec/keys.go")
	tags := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			if i < len(vs.Values) && strings.HasPrefix(name.Name, "tag") {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					tags[strings.Trim(lit.Value, "\"`")] = true
				}
			}
		}
		return true
	})
	require.NotEmpty(t, tags, "exec/keys.go declares no tags")
	return tags
}

// keyTableLines returns the lines of a document that may hold a key
// table: a Markdown document's code blocks, or a package comment.
func keyTableLines(d doc, m *markdown) []string {
	if !d.md {
		return strings.Split(d.text, "\n")
	}
	var lines []string
	for _, b := range m.blocks {
		lines = append(lines, strings.Split(b, "\n")...)
	}
	return lines
}

func TestKeyTablesMatchLayout(t *testing.T) {
	t.Parallel()
	r := theRepo(t)
	consts, numTags, table := layout(t, r)
	var drifts []string

	// layout.go's own table against its constants: every tag below
	// numTags has a row, and every constant names one.
	for name, v := range consts {
		if table[v] == nil {
			drifts = append(drifts, fmt.Sprintf("queues/layout.go: %s = %d has no row in the table", name, v))
		}
	}
	for tag := range numTags {
		if table[tag] == nil {
			drifts = append(drifts, fmt.Sprintf("queues/layout.go: tag %d (below numTags = %d) has no row in the table", tag, numTags))
		}
	}
	for tag := range table {
		if tag >= numTags {
			drifts = append(drifts, fmt.Sprintf("queues/layout.go: the table's tag %d is not below numTags = %d", tag, numTags))
		}
	}

	catalog := catalogTags(t, r)
	queueTables, catalogTables := 0, 0
	for _, d := range r.docs {
		if d.comments {
			continue // the package comment is checked as such
		}
		lines := keyTableLines(d, r.md[d.name])
		seen := map[int]bool{}
		seenCatalog := map[string]bool{}
		for _, line := range lines {
			if catalogKey.MatchString(line) {
				for _, m := range catalogTag.FindAllStringSubmatch(keyPart(line), -1) {
					seenCatalog[m[1]] = true
				}
			}
			if !queueKey.MatchString(line) {
				continue
			}
			rows, err := parseQueueRow(keyPart(line), 3)
			if err != nil {
				drifts = append(drifts, fmt.Sprintf("%s: %v", d.name, err))
				continue
			}
			for _, row := range rows {
				seen[row.tag] = true
				for _, elems := range expand(row.elems) {
					if !table[row.tag][elems] {
						drifts = append(drifts, fmt.Sprintf("%s: the key (tag %d: %s) is not in queues/layout.go's table", d.name, row.tag, elems))
					}
				}
			}
		}
		if len(seen) > 0 {
			queueTables++
			for tag := range table {
				if !seen[tag] {
					drifts = append(drifts, fmt.Sprintf("%s: its key table has no row for tag %d of queues/layout.go", d.name, tag))
				}
			}
		}
		if len(seenCatalog) > 0 {
			catalogTables++
			for tag := range seenCatalog {
				if !catalog[tag] {
					drifts = append(drifts, fmt.Sprintf("%s: its key table names %q, which exec/keys.go does not declare", d.name, tag))
				}
			}
			for tag := range catalog {
				if !seenCatalog[tag] {
					drifts = append(drifts, fmt.Sprintf("%s: its key table has no row for exec/keys.go's %q", d.name, tag))
				}
			}
		}
	}
	require.NotZero(t, queueTables, "no document has a queue key table: is the test looking in the right place?")
	require.NotZero(t, catalogTables, "no document has a catalog key table: is the test looking in the right place?")
	requireNone(t, drifts, "key tables that disagree with queues/layout.go and exec/keys.go")
}
