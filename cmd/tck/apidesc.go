package main

import (
	"github.com/onceproof/tck/internal/apidesc"
)

// checkAPIDesc validates --api-desc before anything is started or written:
// a malformed description is a usage error (exit 3) naming the file, line
// and field, and a description with no api/http target to describe is one
// too.
func checkAPIDesc(file string, p plan) error {
	if file == "" {
		return nil
	}
	used := false
	for _, t := range p.targets {
		used = used || t.kind.Key() == "api/http"
	}
	if !used {
		return usagef("--api-desc describes an api/http target, and the run has none (add --target api/http=URL or api/http=cmd:COMMAND)")
	}
	if _, err := apidesc.Load(file); err != nil {
		return usagef("%v", err)
	}
	return nil
}
