package profile

import _ "embed"

// JSONSchema is the profile's JSON Schema (draft 2020-12), for editors and
// for tools that validate a profile without the kit.
//
//go:embed profile.schema.json
var JSONSchema []byte
