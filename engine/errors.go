package engine

import "errors"

var (
	// ErrEngineConfig: the configuration cannot be served (see the message).
	ErrEngineConfig = errors.New("engine: configuration cannot be served")
	// ErrEngineUpstream: an upstream could not be reached at start.
	ErrEngineUpstream = errors.New("engine: upstream unreachable")
)
