package registry

import "github.com/onceproof/tck/target"

func addBrokerMutants(r *target.Registry) {}
