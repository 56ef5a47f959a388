// Command go-dedupe-by-message is a mutant of the reference consumer service with one
// defect: it keys its processed row and notification claim by message id only, so an edit counts as done.
package main

import "github.com/onceproof/tck/examples/consumer-service/go/svc"

func main() { svc.Main(svc.Defects{DedupeByMessage: true}) }
