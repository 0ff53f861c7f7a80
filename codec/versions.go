package codec

import "github.com/twmb/franz-go/pkg/kmsg"

// MaxKey is the largest API key that kmsg (and so the gateway) knows.
const MaxKey = kmsg.MaxKey

// flexible[k] holds, per API key, the first version whose request and
// response use the flexible (tagged) encoding, or -1. Built once at start:
// kmsg.RequestForKey allocates, the hot path must not.
var (
	reqFlexFrom  [MaxKey + 1]int16
	respFlexFrom [MaxKey + 1]int16
	maxVersion   [MaxKey + 1]int16
	known        [MaxKey + 1]bool
)

func init() {
	for k := int16(0); k <= MaxKey; k++ {
		reqFlexFrom[k], respFlexFrom[k], maxVersion[k] = -1, -1, -1
		req := kmsg.RequestForKey(k)
		if req == nil {
			continue
		}
		known[k] = true
		maxVersion[k] = req.MaxVersion()
		resp := req.ResponseKind()
		for v := int16(0); v <= req.MaxVersion(); v++ {
			req.SetVersion(v)
			if req.IsFlexible() && reqFlexFrom[k] < 0 {
				reqFlexFrom[k] = v
			}
			resp.SetVersion(v)
			if resp.IsFlexible() && respFlexFrom[k] < 0 {
				respFlexFrom[k] = v
			}
		}
	}
}

// Known tells whether kmsg knows the API key.
func Known(key int16) bool { return key >= 0 && key <= MaxKey && known[key] }

// MaxVersion is the newest version kmsg knows for key, -1 if unknown.
func MaxVersion(key int16) int16 {
	if !Known(key) {
		return -1
	}
	return maxVersion[key]
}

// RequestFlexible tells whether a request of this key and version uses header v2 and tagged fields.
func RequestFlexible(key, version int16) bool {
	return Known(key) && reqFlexFrom[key] >= 0 && version >= reqFlexFrom[key]
}

// ResponseFlexible tells whether a response body of this key and version is flexible.
func ResponseFlexible(key, version int16) bool {
	return Known(key) && respFlexFrom[key] >= 0 && version >= respFlexFrom[key]
}

// ResponseHeaderFlexible tells whether the response header carries a tag
// section: flexible responses do, except ApiVersions (key 18), which always
// answers with header v0 so that a client can read it whatever it asked.
func ResponseHeaderFlexible(key, version int16) bool {
	return key != KeyApiVersions && ResponseFlexible(key, version)
}
