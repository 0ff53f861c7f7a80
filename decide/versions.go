package decide

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
	"math"
)

// Versions is the ApiVersions the gateway announces: for each API of the
// table it serves, the intersection of every broker's range with its own.
type Versions struct {
	r [codec.MaxKey + 1]struct {
		min, max int16
		ok       bool
	}
	answerBody [apiVersionsMax + 1][]byte // encoded ApiVersions bodies by version, built once
}

// NewVersions intersects the brokers' ranges (one ApiVersions answer per
// broker) with the table. Each minimum is the broker's own, not raised
// (librdkafka reads a raised Produce minimum as "no compression"), unless
// the gateway cannot parse the older versions.
func NewVersions(brokers []*kmsg.ApiVersionsResponse) *Versions {
	v := &Versions{}
	for k := int16(0); k <= codec.MaxKey; k++ {
		a := &table[k]
		if a.kind == Never {
			continue
		}
		lo, hi := a.min, a.max
		if a.kind == Served {
			blo, bhi, ok := int16(-1), int16(math.MaxInt16), true
			for _, b := range brokers {
				found := false
				for _, kv := range b.ApiKeys {
					if kv.ApiKey == k {
						found = true
						blo = max(blo, kv.MinVersion)
						bhi = min(bhi, kv.MaxVersion)
					}
				}
				ok = ok && found
			}
			if !ok || len(brokers) == 0 {
				continue
			}
			lo, hi = max(lo, blo), min(hi, bhi)
		}
		if lo > hi {
			continue
		}
		v.r[k].min, v.r[k].max, v.r[k].ok = lo, hi, true
	}
	for ver := int16(0); ver <= apiVersionsMax; ver++ {
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = ver
		for k := int16(0); k <= codec.MaxKey; k++ {
			if !v.r[k].ok {
				continue
			}
			kv := kmsg.NewApiVersionsResponseApiKey()
			kv.ApiKey, kv.MinVersion, kv.MaxVersion = k, v.r[k].min, v.r[k].max
			resp.ApiKeys = append(resp.ApiKeys, kv)
		}
		v.answerBody[ver] = resp.AppendTo(nil)
	}
	return v
}

// Has tells whether version of key is announced.
func (v *Versions) Has(key, version int16) bool {
	if key < 0 || key > codec.MaxKey || !v.r[key].ok {
		return false
	}
	return version >= v.r[key].min && version <= v.r[key].max
}

// Range returns the announced range of key.
func (v *Versions) Range(key int16) (min, max int16, ok bool) {
	if key < 0 || key > codec.MaxKey {
		return 0, 0, false
	}
	r := v.r[key]
	return r.min, r.max, r.ok
}
