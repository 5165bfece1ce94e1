package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The repository as the documentation tests see it: its files, its Go
// packages (parsed, without type checking) and its documents. It is read
// once for all of them.

// repo is the tree under the module's root.
type repo struct {
	dir   string
	files map[string]bool      // every file's slash path from the root
	dirs  map[string]bool      // every directory's, "" for the root
	base  map[string][]string  // a file's base name -> its paths
	pkgs  map[string]*pkg      // a package's directory -> the package
	names map[string][]*pkg    // a package name -> the packages of that name
	docs  []doc                // what the tests check
	md    map[string]*markdown // a Markdown document's path -> its parts
}

// pkg is one directory's Go package (its non-test files).
type pkg struct {
	dir   string
	name  string
	files []string // non-test .go files, base names, sorted
	doc   string   // the package comment
	// decls holds the package's top-level names; members, for each type,
	// its methods, its fields and its interface's methods.
	decls   map[string]bool
	members map[string]map[string]bool
	fileSet *token.FileSet
	asts    map[string]*ast.File // base name -> parsed file
}

// doc is a text the tests check: a Markdown file, a package comment, or
// the other comments of a Go file, of which only the documents they name
// (a word ending in .md) are checked.
type doc struct {
	name     string // for messages: a path, or "package comment of DIR"
	dir      string // the directory relative paths in it start from
	text     string
	md       bool
	comments bool
}

var (
	loadOnce sync.Once
	loaded   *repo
	loadErr  error
)

// theRepo reads the repository once.
func theRepo(t *testing.T) *repo {
	t.Helper()
	loadOnce.Do(func() { loaded, loadErr = load(root(t)) })
	require.NoError(t, loadErr)
	return loaded
}

// skipDir reports whether the walk leaves out a directory: version control,
// hidden and underscore directories (as the go command does) but for the
// CI's, and testdata, which holds no packages.
func skipDir(rel, name string) bool {
	switch {
	case rel == ".ci" || rel == ".github" || strings.HasPrefix(rel, ".github/"):
		return false
	case strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_"):
		return true
	}
	return false
}

func load(dir string) (*repo, error) {
	r := &repo{
		dir:   dir,
		files: map[string]bool{},
		dirs:  map[string]bool{"": true},
		base:  map[string][]string{},
		pkgs:  map[string]*pkg{},
		names: map[string][]*pkg{},
		md:    map[string]*markdown{},
	}
	goFiles := map[string][]string{} // directory -> its .go files
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if d.IsDir() {
			if skipDir(rel, d.Name()) {
				return filepath.SkipDir
			}
			r.dirs[rel] = true
			return nil
		}
		r.files[rel] = true
		r.base[d.Name()] = append(r.base[d.Name()], rel)
		if strings.HasSuffix(rel, ".go") && !strings.Contains("/"+rel, "/testdata/") {
			goFiles[path.Dir(rel)] = append(goFiles[path.Dir(rel)], d.Name())
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			var comments []string
			for _, line := range strings.Split(string(b), "\n") {
				if c, ok := strings.CutPrefix(strings.TrimSpace(line), "//"); ok {
					comments = append(comments, c)
				}
			}
			r.docs = append(r.docs, doc{name: "comments of " + rel, dir: path.Dir(rel), text: strings.Join(comments, "\n"), comments: true})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for d, names := range goFiles {
		p, err := loadPkg(dir, d, names)
		if err != nil {
			return nil, err
		}
		if p == nil {
			continue
		}
		r.pkgs[d] = p
		r.names[p.name] = append(r.names[p.name], p)
		if p.doc != "" {
			r.docs = append(r.docs, doc{name: "package comment of " + d, dir: d, text: p.doc})
		}
	}
	for f := range r.files {
		if !isDocument(f) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return nil, err
		}
		r.docs = append(r.docs, doc{name: f, dir: path.Dir(f), text: string(b), md: true})
		r.md[f] = parseMarkdown(string(b))
	}
	slices.SortFunc(r.docs, func(a, b doc) int { return strings.Compare(a.name, b.name) })
	return r, nil
}

// isDocument reports whether a file is one of the documents whose paths,
// names, links and tables are checked: the README, the changelog, docs/ and
// a command's README.
func isDocument(f string) bool {
	switch {
	case f == "README.md" || f == "CHANGELOG.md":
		return true
	case path.Dir(f) == "docs" && strings.HasSuffix(f, ".md"):
		return true
	case strings.HasPrefix(f, "cmd/") && strings.Count(f, "/") == 2 && strings.HasPrefix(path.Base(f), "README"):
		return true
	}
	return false
}

// loadPkg parses the non-test Go files of directory d, or returns nil when
// it has none.
func loadPkg(root, d string, names []string) (*pkg, error) {
	p := &pkg{
		dir:     d,
		decls:   map[string]bool{},
		members: map[string]map[string]bool{},
		fileSet: token.NewFileSet(),
		asts:    map[string]*ast.File{},
	}
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(p.fileSet, filepath.Join(root, d, n), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		p.files = append(p.files, n)
		p.asts[n] = f
		p.name = f.Name.Name
		if f.Doc != nil && p.doc == "" {
			p.doc = f.Doc.Text()
		}
		p.collect(f)
	}
	if len(p.files) == 0 {
		return nil, nil
	}
	slices.Sort(p.files)
	return p, nil
}

// collect records a file's top-level names, and its types' members.
func (p *pkg) collect(f *ast.File) {
	member := func(typ, name string) {
		if p.members[typ] == nil {
			p.members[typ] = map[string]bool{}
		}
		p.members[typ][name] = true
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) == 0 {
				p.decls[d.Name.Name] = true
				continue
			}
			member(receiverType(d.Recv.List[0].Type), d.Name.Name)
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						p.decls[n.Name] = true
					}
				case *ast.TypeSpec:
					p.decls[s.Name.Name] = true
					var fields *ast.FieldList
					switch t := s.Type.(type) {
					case *ast.StructType:
						fields = t.Fields
					case *ast.InterfaceType:
						fields = t.Methods
					}
					if fields == nil {
						continue
					}
					for _, fl := range fields.List {
						for _, n := range fl.Names {
							member(s.Name.Name, n.Name)
						}
						if len(fl.Names) == 0 { // embedded
							member(s.Name.Name, receiverType(fl.Type))
						}
					}
				}
			}
		}
	}
}

// receiverType is the name of a receiver's (or embedded field's) type:
// T, *T, T[P], pkg.T.
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.SelectorExpr:
			return x.Sel.Name
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// readFile reads a file of the repository by its slash path.
func readFile(r *repo, f string) (string, error) {
	b, err := os.ReadFile(filepath.Join(r.dir, filepath.FromSlash(f)))
	return string(b), err
}
