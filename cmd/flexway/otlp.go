package main

// observability.otlp at the process's level: the exporters made once the
// engine holds its series, its tracer given to the sessions before they
// serve, the last spans and metrics sent at the end of the drain.

import (
	"context"
	"log/slog"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/engine"
	"github.com/flexway/flexway/engine/signals"
	"github.com/flexway/flexway/otlp"
	"go.opentelemetry.io/otel"
)

// otlpFlushTimeout bounds the last export at stop.
const otlpFlushTimeout = 5 * time.Second

// startOTLP starts the exporters snap asks for; stop sends what is left.
// Absent observability.otlp it does nothing.
func startOTLP(ctx context.Context, snap *configs.Snapshot, e *engine.Engine, log *slog.Logger) (stop func(), err error) {
	o := snap.File.Observability.OTLP
	if o == nil {
		return func() {}, nil
	}
	// A collector down fails every export: a line a second at most.
	lines := signals.NewRateLimiter(1)
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		lines.Line(log, slog.LevelWarn, "otlp export failed", "error", err.Error())
	}))
	x, err := otlp.Start(ctx, o, e.Metrics())
	if err != nil {
		return nil, err
	}
	e.Trace(x.Tracer)
	log.Info("otlp export on", "endpoint", storeName(o.Endpoint), "protocol", o.Protocol,
		"sampling_ratio", o.SamplingRatio, "service.instance.id", x.InstanceID)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), otlpFlushTimeout)
		defer cancel()
		if err := x.Shutdown(ctx); err != nil {
			log.Warn("otlp export failed", "error", err.Error())
		}
	}, nil
}
