package apidesc

import (
	"fmt"
	"strings"
	"testing"
)

// Nested aliases, in a field the kit walks (a create body) or not, and a
// second document are refused at once with file:line (issue 21, item 3).
func TestBoundedInput(t *testing.T) {
	var b strings.Builder
	b.WriteString("contract: reject-409\nx0: &a0 {k: v}\n")
	for l := 1; l <= 3; l++ {
		fmt.Fprintf(&b, "x%d: &a%d [", l, l)
		for i := 0; i < 300; i++ {
			fmt.Fprintf(&b, "*a%d,", l-1)
		}
		b.WriteString("]\n")
	}
	b.WriteString("create: {path: /o, body: *a3}\n")
	for name, c := range map[string]struct{ doc, want string }{
		"alias bomb":      {b.String(), "d.yaml:4: (document): the aliases expand to more than 100000 nodes"},
		"second document": {"contract: reject-409\n---\ncontract: replay\n", "d.yaml:2: (document): a second YAML document"},
	} {
		_, err := Parse("d.yaml", []byte(c.doc))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", name, err, c.want)
		}
	}
}
