// Package otlp sends the gateway's signals to an OpenTelemetry collector
// (seed 001 "Signaux", observability.otlp): the flexway.kafka.* metrics,
// read from the series /metrics serves (metrics.go), and the request spans
// the sessions sample (engine/signals' Tracer), both with one resource per
// replica: service.name flexway, service.instance.id. Made at start, ended
// at stop (Shutdown sends what is left). Absent observability.otlp, nothing
// of it is made.
package otlp

import (
	"context"
	"errors"
	"net/url"
	"path"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/engine/signals"
	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// ServiceName is the resource's service.name.
const ServiceName = "flexway"

// Exporter holds the providers that send the signals.
type Exporter struct {
	// Tracer makes the request spans; nil when sampling_ratio is 0.
	Tracer *signals.Tracer
	// InstanceID is the replica's service.instance.id.
	InstanceID string

	traces  *sdktrace.TracerProvider // nil: no span
	metrics *sdkmetric.MeterProvider
}

// Start makes the exporters of o, sending the flexway.kafka.* series of
// set every o.MetricsInterval. Nothing is dialed yet: a collector down
// costs a logged export error, never the gateway.
func Start(ctx context.Context, o *configs.ObservabilityOTLP, set *metrics.Set) (*Exporter, error) {
	e := &Exporter{InstanceID: o.InstanceID}
	if e.InstanceID == "" {
		e.InstanceID = uuid.NewString()
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", ServiceName),
		attribute.String("service.instance.id", e.InstanceID),
	))
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(o.Endpoint)
	if err != nil {
		return nil, err
	}
	mexp, err := metricExporter(ctx, o.Protocol, u)
	if err != nil {
		return nil, err
	}
	reader := sdkmetric.NewPeriodicReader(mexp, sdkmetric.WithInterval(o.MetricsInterval.D()),
		sdkmetric.WithProducer(newProducer(set, time.Now())))
	e.metrics = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
	if o.SamplingRatio > 0 {
		texp, err := traceExporter(ctx, o.Protocol, u)
		if err != nil {
			return nil, errors.Join(err, e.metrics.Shutdown(ctx))
		}
		// The sample is drawn by signals.Tracer before the SDK is called:
		// every span it starts is kept.
		e.traces = sdktrace.NewTracerProvider(sdktrace.WithBatcher(texp), sdktrace.WithResource(res),
			sdktrace.WithSampler(sdktrace.AlwaysSample()))
		e.Tracer = signals.NewTracer(e.traces.Tracer("github.com/flexway/flexway"), o.SamplingRatio)
	}
	return e, nil
}

// Shutdown sends what is left and stops the exporters, within ctx.
func (e *Exporter) Shutdown(ctx context.Context) error {
	var err error
	if e.traces != nil {
		err = e.traces.Shutdown(ctx)
	}
	return errors.Join(err, e.metrics.Shutdown(ctx))
}

// signalPath is the OTLP/HTTP path of a signal under the endpoint's own
// (the OTLP specification's /v1/traces, /v1/metrics).
func signalPath(u *url.URL, signal string) string {
	return path.Join("/", u.Path, "v1", signal)
}

func traceExporter(ctx context.Context, protocol string, u *url.URL) (sdktrace.SpanExporter, error) {
	if protocol == "grpc" {
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(u.Host)}
		if u.Scheme == "http" {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(u.Host), otlptracehttp.WithURLPath(signalPath(u, "traces"))}
	if u.Scheme == "http" {
		opts = append(opts, otlptracehttp.WithInsecure())
	}
	return otlptracehttp.New(ctx, opts...)
}

func metricExporter(ctx context.Context, protocol string, u *url.URL) (sdkmetric.Exporter, error) {
	if protocol == "grpc" {
		opts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithEndpoint(u.Host)}
		if u.Scheme == "http" {
			opts = append(opts, otlpmetricgrpc.WithInsecure())
		}
		return otlpmetricgrpc.New(ctx, opts...)
	}
	opts := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpoint(u.Host), otlpmetrichttp.WithURLPath(signalPath(u, "metrics"))}
	if u.Scheme == "http" {
		opts = append(opts, otlpmetrichttp.WithInsecure())
	}
	return otlpmetrichttp.New(ctx, opts...)
}
