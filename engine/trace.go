package engine

import "github.com/flexway/flexway/engine/signals"

// Trace makes the sessions' request spans with t (observability.otlp;
// nil: none). Called before Serve.
func (e *Engine) Trace(t *signals.Tracer) { e.env.Tracer = t }
