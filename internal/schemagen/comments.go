package schemagen

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// comments reads the doc comments of the exported types and fields of the
// Go package in dir (non-test files), whose import path is importPath,
// into m as the jsonschema Reflector's CommentMap wants them:
// "<import path>.<Type>" and "<import path>.<Type>.<Field>". Each is the
// first paragraph of its comment on one line; a type's leading "Name: ",
// "Name is " or "Name are " is dropped, so it reads as a description.
func comments(m map[string]string, dir, importPath string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				if !ts.Name.IsExported() {
					continue
				}
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				key := importPath + "." + ts.Name.Name
				if s := paragraph(doc); s != "" {
					m[key] = typeDescription(ts.Name.Name, s)
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fld := range st.Fields.List {
					doc := fld.Doc
					if doc == nil {
						doc = fld.Comment
					}
					s := paragraph(doc)
					if s == "" {
						continue
					}
					for _, n := range fld.Names {
						if n.IsExported() {
							m[key+"."+n.Name] = s
						}
					}
				}
			}
		}
	}
	return nil
}

// paragraph is the first paragraph of a comment, its lines joined.
func paragraph(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	text, _, _ := strings.Cut(g.Text(), "\n\n")
	return strings.Join(strings.Fields(text), " ")
}

// typeDescription drops the type's name from the start of its comment
// ("Provider is one model service.": "One model service.", "Worker tunes
// the consume loop.": "Tunes the consume loop.").
func typeDescription(name, s string) string {
	rest, ok := strings.CutPrefix(s, name+": ")
	if !ok {
		rest, ok = strings.CutPrefix(s, name+" ")
		if r, _ := utf8.DecodeRuneInString(rest); !ok || !unicode.IsLower(r) {
			return s
		}
		for _, verb := range []string{"is ", "are "} {
			rest = strings.TrimPrefix(rest, verb)
		}
	}
	r, n := utf8.DecodeRuneInString(rest)
	return string(unicode.ToUpper(r)) + rest[n:]
}
