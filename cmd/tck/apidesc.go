package main

import (
	"github.com/onceproof/tck/internal/apidesc"
	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/tlsmat"
)

// checkAPIDesc validates --api-desc before anything is started or written:
// a malformed description is a usage error (exit 3) naming the file, line
// and field, and a description with no api/http target to describe is one
// too. It returns the description (nil without --api-desc).
func checkAPIDesc(file string, p plan) (*apidesc.Description, error) {
	if file == "" {
		return nil, nil
	}
	used := false
	for _, t := range p.targets {
		used = used || t.kind.Key() == "api/http"
	}
	if !used {
		return nil, usagef("--api-desc describes an api/http target, and the run has none (add --target api/http=URL or api/http=cmd:COMMAND)")
	}
	d, err := apidesc.Load(file)
	if err != nil {
		return nil, usagef("%v", err)
	}
	return d, nil
}

// fileMaterial is the trust material a profile or an api description
// names (their tls section), used when no --tls-* flag is given: the
// flags win as a whole. Both naming different material is a usage error.
func fileMaterial(prof *profile.Profile, desc *apidesc.Description) (tlsmat.Material, error) {
	pm, dm := prof.Material(), desc.Material()
	switch {
	case pm.Empty():
		return dm, nil
	case dm.Empty():
		return pm, nil
	}
	a, b := pm, dm
	a.Origin, b.Origin = "", ""
	if a != b {
		return tlsmat.Material{}, usagef("%s and %s name different tls material: name it in one of them, or give --tls-* (docs/tls.md)", pm.Origin, dm.Origin)
	}
	return pm, nil
}
