// Command go is the reference consumer service in Go (see package svc and
// docs/consumer-service.md). The kit runs it as a black box:
//
//	tck run --suite consumer --target 'consumer/process=cmd:go run ./examples/consumer-service/go'
package main

import "github.com/onceproof/tck/examples/consumer-service/go/svc"

func main() { svc.Main(svc.Defects{}) }
