package rabbitmq

// SharedLocal is sharedLocal for this package's external tests.
var SharedLocal = sharedLocal
