// Command go-no-claim is a mutant of the reference consumer service with one
// defect: it sends the notification on every delivery: no claim record, no question to the notifier.
package main

import "github.com/onceproof/tck/examples/consumer-service/go/svc"

func main() { svc.Main(svc.Defects{NoClaim: true}) }
