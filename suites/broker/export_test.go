package broker

// RestartFactor is restartFactor for the external tests.
const RestartFactor = restartFactor
