package hidden

// Thing is an internal type.
type Thing struct{}

// Other is another internal type.
type Other struct{}
