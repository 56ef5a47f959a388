// Command go-unversioned-index is a mutant of the reference consumer service with one
// defect: it writes the index document unconditionally, without the event's version as an external version.
package main

import "github.com/onceproof/tck/examples/consumer-service/go/svc"

func main() { svc.Main(svc.Defects{UnversionedIndex: true}) }
