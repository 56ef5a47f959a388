// Package options applies functional options: the one helper behind every
// broker adapter's Option (Open, Run, RunEmbedded, RunLocal, RunCluster).
package options

// Apply applies opts, in order, to a zero S and returns it.
func Apply[S any, O ~func(*S)](opts []O) S {
	var s S
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	return s
}
