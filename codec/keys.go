package codec

import "github.com/twmb/franz-go/pkg/kmsg"

// The Kafka API keys that code outside decide's table names (the table
// registers each key in its own numbered file); kmsg's numbering.
const (
	KeyProduce          = int16(kmsg.Produce)
	KeyFetch            = int16(kmsg.Fetch)
	KeySASLHandshake    = int16(kmsg.SASLHandshake)
	KeyApiVersions      = int16(kmsg.ApiVersions)
	KeySASLAuthenticate = int16(kmsg.SASLAuthenticate)
)

// MaxString is the longest a Kafka (non-compact) string can be: a name the
// gateway prefixes must still fit in it.
const MaxString = 1<<15 - 1
