package profile

import (
	"reflect"

	"github.com/onceproof/tck/internal/strictyaml"
)

// The schema test walks the model as the loader sees it: these give it the
// decoder's own field list (strictyaml.Fields with the profile tag).

type field struct {
	index    []int
	required bool
}

func fieldsOf(t reflect.Type) map[string]field {
	out := map[string]field{}
	for _, f := range strictyaml.Fields(t, decodeOptions.RequiredTag) {
		out[f.Name] = field{index: f.Index, required: f.Required}
	}
	return out
}

func fieldNames(t reflect.Type) []string {
	var names []string
	for _, f := range strictyaml.Fields(t, decodeOptions.RequiredTag) {
		names = append(names, f.Name)
	}
	return names
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
