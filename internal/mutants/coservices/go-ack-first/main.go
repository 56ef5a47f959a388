// Command go-ack-first is a mutant of the reference consumer service with one
// defect: it acks each delivery as it arrives, before its effects.
package main

import "github.com/onceproof/tck/examples/consumer-service/go/svc"

func main() { svc.Main(svc.Defects{AckFirst: true}) }
