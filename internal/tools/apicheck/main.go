// Command apicheck fails when an exported identifier of a public package
// (one whose import path has no internal element) names a type of an
// internal package that an outside user could hold but not name. A public
// package may re-export an internal type by an exported alias
// (`type Log = verdict.Log`): the alias is the name, so it is allowed.
//
//	go run ./internal/tools/apicheck ./...
//
// It prints one line per leak, "package.Identifier: internal/pkg.Type",
// and exits 1 if there is any (2 if the packages do not load).
package main

import (
	"fmt"
	"go/types"
	"os"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
)

func main() {
	patterns := os.Args[1:]
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	leaks, err := check(isInternal, patterns...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicheck:", err)
		os.Exit(2)
	}
	for _, l := range leaks {
		fmt.Println(l)
	}
	if len(leaks) > 0 {
		fmt.Fprintf(os.Stderr, "apicheck: %d exported identifiers of public packages name an internal type (re-export it by an alias, or keep it out of the signature)\n", len(leaks))
		os.Exit(1)
	}
}

// check loads the packages and returns the leaks, sorted; internal says
// which import paths are internal.
func check(internal func(path string) bool, patterns ...string) ([]string, error) {
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedTypes}, patterns...)
	if err != nil {
		return nil, err
	}
	if packages.PrintErrors(pkgs) > 0 {
		return nil, fmt.Errorf("the packages do not load")
	}
	var public []*packages.Package
	for _, p := range pkgs {
		if p.Name != "main" && !internal(p.PkgPath) {
			public = append(public, p)
		}
	}
	// The internal types some public package names by an exported alias.
	aliased := map[*types.TypeName]bool{}
	for _, p := range public {
		sc := p.Types.Scope()
		for _, name := range sc.Names() {
			if tn, ok := sc.Lookup(name).(*types.TypeName); ok && tn.Exported() && tn.IsAlias() {
				if n, ok := types.Unalias(tn.Type()).(*types.Named); ok {
					aliased[n.Obj()] = true
				}
			}
		}
	}
	var leaks []string
	for _, p := range public {
		sc := p.Types.Scope()
		for _, name := range sc.Names() {
			obj := sc.Lookup(name)
			if !obj.Exported() {
				continue
			}
			w := &walker{internal: internal, aliased: aliased, seen: map[types.Type]bool{}, report: func(t *types.TypeName) {
				leaks = append(leaks, fmt.Sprintf("%s.%s: %s.%s", p.PkgPath, name, t.Pkg().Path(), t.Name()))
			}}
			switch o := obj.(type) {
			case *types.TypeName:
				if o.IsAlias() {
					w.walk(o.Type())
					continue
				}
				if n, ok := o.Type().(*types.Named); ok {
					w.underlying(n)
				}
			default:
				w.walk(obj.Type())
			}
		}
	}
	sort.Strings(leaks)
	return compact(leaks), nil
}

func isInternal(path string) bool {
	return strings.HasSuffix(path, "/internal") || strings.Contains(path, "/internal/") || strings.HasPrefix(path, "internal/")
}

type walker struct {
	internal func(path string) bool
	aliased  map[*types.TypeName]bool
	seen     map[types.Type]bool
	report   func(*types.TypeName)
}

// underlying walks what a named type exposes: its exported fields or
// interface methods, its other structure, and its exported methods.
func (w *walker) underlying(n *types.Named) {
	if w.seen[n] {
		return
	}
	w.seen[n] = true
	w.walk(n.Underlying())
	for m := range n.Methods() {
		if m.Exported() {
			w.walk(m.Type())
		}
	}
}

func (w *walker) walk(t types.Type) {
	switch t := t.(type) {
	case *types.Alias:
		if t.Obj().Pkg() != nil && !w.internal(t.Obj().Pkg().Path()) {
			return // a public name; its own package is checked for it
		}
		w.walk(types.Unalias(t))
	case *types.Named:
		for a := range t.TypeArgs().Types() {
			w.walk(a)
		}
		obj := t.Obj()
		if obj.Pkg() == nil || !w.internal(obj.Pkg().Path()) {
			return // predeclared, or public: checked in its own package
		}
		if !w.aliased[t.Origin().Obj()] {
			w.report(obj)
			return
		}
		w.underlying(t)
	case *types.Pointer:
		w.walk(t.Elem())
	case *types.Slice:
		w.walk(t.Elem())
	case *types.Array:
		w.walk(t.Elem())
	case *types.Chan:
		w.walk(t.Elem())
	case *types.Map:
		w.walk(t.Key())
		w.walk(t.Elem())
	case *types.Signature:
		for v := range t.Params().Variables() {
			w.walk(v.Type())
		}
		for v := range t.Results().Variables() {
			w.walk(v.Type())
		}
	case *types.Struct:
		for f := range t.Fields() {
			if f.Exported() {
				w.walk(f.Type())
			}
		}
	case *types.Interface:
		for m := range t.Methods() {
			if m.Exported() {
				w.walk(m.Type())
			}
		}
	case *types.TypeParam:
		w.walk(t.Constraint())
	}
}

func compact(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}
