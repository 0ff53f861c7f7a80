package decide

// ApiVersions (key 18), versions 0-4: answered by the gateway, before and
// after authentication, from the intersection built once (D2). A version
// the gateway does not know gets the KIP-511 answer: v0, UNSUPPORTED_VERSION
// and the ApiVersions range, so that the client retries with one it knows.

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const apiVersionsMax = 4

func init() {
	reg(18, Local, 0, apiVersionsMax, nil, nil)
	reg(17, Local, 0, 1, nil, nil) // SaslHandshake: answered by the engine
	reg(36, Local, 0, 2, nil, nil) // SaslAuthenticate: answered by the engine
}

// AppendAnswer appends the whole ApiVersions answer frame (size prefix
// included) to the request h.
func (v *Versions) AppendAnswer(dst []byte, h *codec.RequestHeader) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = codec.AppendResponseHeader(dst, 18, 0, h.Correlation) // header v0 always
	if h.Version < 0 || h.Version > apiVersionsMax {
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 0
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		kv := kmsg.NewApiVersionsResponseApiKey()
		kv.ApiKey, kv.MinVersion, kv.MaxVersion = 18, 0, apiVersionsMax
		resp.ApiKeys = append(resp.ApiKeys, kv)
		dst = resp.AppendTo(dst)
	} else {
		dst = append(dst, v.answerBody[h.Version]...)
	}
	codec.PutSize(dst[start:], len(dst)-start-codec.SizeLen)
	return dst
}
