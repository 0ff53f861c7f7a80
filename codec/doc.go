// Package codec is the Kafka wire format as the gateway needs it: frame sizes,
// request and response headers, and the rewriters of the hot APIs (Produce
// requests, Fetch requests and responses) that rename topics without decoding
// or copying record batches.
//
// codec is pure: bytes in, values and bytes out; no net, no gnet, no clock.
// Nothing here keeps a slice of its input after returning, except Vec, whose
// references into the input frame are valid only as long as that frame is
// (the caller writes the Vec before it lets the frame go).
package codec
