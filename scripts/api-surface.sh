#!/bin/sh
# api-surface.sh: counts the exported identifiers of Go packages, as
# `go doc -all` shows them (exported consts, vars, funcs, types, methods,
# struct fields and interface methods; test files left out), and names the
# ones without a doc comment.
#
#   scripts/api-surface.sh ./co ./suites/consumer      # one line per package, then the total
#   scripts/api-surface.sh -undocumented ./co          # also list the undocumented ones
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/main.go" <<'GO'
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"sort"
	"strings"
)

func main() {
	undoc := flag.Bool("undocumented", false, "list the exported identifiers without a doc comment")
	flag.Parse()
	total, missing := 0, 0
	for _, dir := range flag.Args() {
		out, err := exec.Command("go", "list", "-f", "{{.Dir}}", dir).Output()
		if err != nil {
			fmt.Fprintf(os.Stderr, "api-surface: %s: not a package\n", dir)
			os.Exit(2)
		}
		n, u := count(strings.TrimSpace(string(out)))
		fmt.Printf("%5d  %s (%d undocumented)\n", n, dir, len(u))
		if *undoc {
			for _, s := range u {
				fmt.Printf("         undocumented: %s\n", s)
			}
		}
		total += n
		missing += len(u)
	}
	fmt.Printf("%5d  total (%d undocumented)\n", total, missing)
}

// count is the package's exported identifiers and the undocumented ones.
func count(dir string) (int, []string) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	if err != nil {
		fmt.Fprintf(os.Stderr, "api-surface: %v\n", err)
		os.Exit(2)
	}
	n := 0
	var undoc []string
	note := func(name, text string) {
		n++
		if strings.TrimSpace(text) == "" {
			undoc = append(undoc, name)
		}
	}
	for _, p := range pkgs {
		d := doc.New(p, dir, 0)
		values := func(vs []*doc.Value) {
			for _, v := range vs {
				for _, s := range v.Decl.Specs {
					vs := s.(*ast.ValueSpec)
					for _, id := range vs.Names {
						if id.IsExported() {
							// A name in a documented group, or with a line comment, is documented.
							note(id.Name, v.Doc+vs.Doc.Text()+vs.Comment.Text())
						}
					}
				}
			}
		}
		funcs := func(fs []*doc.Func, recv string) {
			for _, f := range fs {
				note(recv+f.Name, f.Doc)
			}
		}
		values(d.Consts)
		values(d.Vars)
		funcs(d.Funcs, "")
		for _, t := range d.Types {
			note(t.Name, t.Doc)
			values(t.Consts)
			values(t.Vars)
			funcs(t.Funcs, "")
			funcs(t.Methods, t.Name+".")
			for _, s := range t.Decl.Specs {
				ts := s.(*ast.TypeSpec)
				var fields *ast.FieldList
				switch x := ts.Type.(type) {
				case *ast.StructType:
					fields = x.Fields
				case *ast.InterfaceType:
					fields = x.Methods
				}
				if fields == nil {
					continue
				}
				for _, f := range fields.List {
					for _, id := range f.Names {
						if id.IsExported() {
							note(t.Name+"."+id.Name, f.Doc.Text()+f.Comment.Text())
						}
					}
				}
			}
		}
	}
	sort.Strings(undoc)
	return n, undoc
}
GO
exec go run "$tmp/main.go" "$@"
