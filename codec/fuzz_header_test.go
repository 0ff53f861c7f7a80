// FuzzRequestHeader: the request header's parsing. Seeds and checks are
// fuzz_test.go's.

package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// --- FuzzRequestHeader -----------------------------------------------------

func FuzzRequestHeader(f *testing.F) {
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		req := kmsg.RequestForKey(k)
		if req == nil {
			continue
		}
		for _, v := range []int16{0, req.MaxVersion() / 2, req.MaxVersion()} {
			req.SetVersion(v)
			fr := frameOf(req, int32(k)*1000+int32(v), "client-"+kmsg.NameForKey(k))
			f.Add(fr)
			f.Add(withHeaderTags(fr))
			f.Add(withNullClient(fr))
		}
	}
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 1})                   // no client id length
	f.Add([]byte{0, 0x7f, 0, 0, 0, 0, 0, 1, 0, 0})          // unknown key
	f.Add([]byte{0, 0, 0x7f, 0, 0, 0, 0, 1, 0, 1, 'x'})     // version past kmsg's
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 1, 0xff, 0xfe})       // client id length -2
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0x85, 0x80}) // truncated tag count

	f.Fuzz(checkRequestHeader)
}

// checkRequestHeader is FuzzRequestHeader's body: the parser reads key,
// version and correlation as the frame holds them, refuses only with the
// codec's errors, aliases the client id, and what it accepts re-encodes to
// itself and does not panic kmsg.
func checkRequestHeader(t *testing.T, frame []byte) {
	h, err := ParseRequestHeader(frame)
	if len(frame) >= 8 {
		if h.Key != int16(binary.BigEndian.Uint16(frame)) || h.Version != int16(binary.BigEndian.Uint16(frame[2:])) ||
			h.Correlation != int32(binary.BigEndian.Uint32(frame[4:])) {
			t.Fatalf("key/version/correlation %+v misread", h)
		}
	}
	if err != nil {
		if !isCodecErr(err) {
			t.Fatalf("unexpected error %v", err)
		}
		if errors.Is(err, ErrCodecUnknownKey) && Known(h.Key) {
			t.Fatalf("known key %d reported unknown", h.Key)
		}
		return
	}
	if !Known(h.Key) {
		t.Fatalf("unknown key %d accepted", h.Key)
	}
	if h.BodyOffset < 10 || h.BodyOffset > len(frame) {
		t.Fatalf("body offset %d in a frame of %d", h.BodyOffset, len(frame))
	}
	if h.ClientNull {
		if h.ClientID != nil || frame[8] != 0xff || frame[9] != 0xff {
			t.Fatalf("null client id misread: %q", h.ClientID)
		}
	} else {
		if !bytes.Equal(h.ClientID, frame[10:10+len(h.ClientID)]) {
			t.Fatal("client id is not the frame's")
		}
		if len(h.ClientID) > 0 && &h.ClientID[0] != &frame[10] {
			t.Fatal("client id copied, not aliased")
		}
		if cap(h.ClientID) != len(h.ClientID) {
			t.Fatal("client id slice may be appended over the frame")
		}
	}
	inRange := h.Version >= 0 && h.Version <= MaxVersion(h.Key)
	if inRange && h.Flexible != RequestFlexible(h.Key, h.Version) {
		t.Fatalf("flexible %v for %d v%d", h.Flexible, h.Key, h.Version)
	}
	if !inRange && h.Flexible {
		t.Fatal("an unknown version read as flexible")
	}
	// The header re-encodes to itself (tags emptied).
	enc := AppendRequestHeader(nil, h.Key, h.Version, h.Correlation, h.ClientID, h.ClientNull, h.Flexible)
	h2, err := ParseRequestHeader(enc)
	if err != nil || h2.Key != h.Key || h2.Version != h.Version || h2.Correlation != h.Correlation ||
		h2.ClientNull != h.ClientNull || !bytes.Equal(h2.ClientID, h.ClientID) || h2.BodyOffset != len(enc) {
		t.Fatalf("re-encoded header %+v %v, was %+v", h2, err, h)
	}
	// decide hands the body of the APIs off the hot path to kmsg: it
	// must not panic on any body the header parser lets through.
	if inRange {
		req := kmsg.RequestForKey(h.Key)
		req.SetVersion(h.Version)
		_ = req.ReadFrom(frame[h.BodyOffset:])
	}
}
