package codec

import "github.com/twmb/franz-go/pkg/kbin"

// rd wraps kbin.Reader with the flexible/non-flexible variants the rewriters
// need. Strings and bytes are returned as slices of the input.
type rd struct {
	kbin.Reader
	flex bool
}

func (r *rd) str() []byte {
	if r.flex {
		l := int(r.Uvarint()) - 1
		if l < 0 {
			return nil
		}
		return r.Span(l)
	}
	l := r.Int16()
	if l < 0 {
		return nil
	}
	return r.Span(int(l))
}

// nbytes reads nullable bytes; null reports as nil, ok as null=true.
func (r *rd) nbytes() (b []byte, null bool) {
	var l int
	if r.flex {
		l = int(r.Uvarint()) - 1
	} else {
		l = int(r.Int32())
	}
	if l < 0 {
		return nil, true
	}
	return r.Span(l), false
}

func (r *rd) arr() int {
	var n int
	if r.flex {
		n = int(r.CompactArrayLen())
	} else {
		n = int(r.ArrayLen())
	}
	if n < 0 {
		return 0
	}
	return n
}

// tags skips a tag section if flexible.
func (r *rd) tags() {
	if r.flex {
		skipTags(&r.Reader)
	}
}

func (r *rd) ok() bool { return r.Ok() }

// wr appends with the flexible/non-flexible variants.
func appendStr(dst []byte, flex bool, s []byte) []byte {
	if flex {
		dst = kbin.AppendUvarint(dst, uint32(len(s)+1))
	} else {
		dst = kbin.AppendInt16(dst, int16(len(s)))
	}
	return append(dst, s...)
}

func appendNullStr(dst []byte, flex bool, s []byte, null bool) []byte {
	if null {
		if flex {
			return append(dst, 0)
		}
		return kbin.AppendInt16(dst, -1)
	}
	return appendStr(dst, flex, s)
}

func appendArr(dst []byte, flex bool, n int) []byte {
	if flex {
		return kbin.AppendUvarint(dst, uint32(n+1))
	}
	return kbin.AppendInt32(dst, int32(n))
}

// appendBytesLen writes the length of a (nullable) bytes field.
func appendBytesLen(dst []byte, flex bool, n int, null bool) []byte {
	if null {
		if flex {
			return append(dst, 0)
		}
		return kbin.AppendInt32(dst, -1)
	}
	if flex {
		return kbin.AppendUvarint(dst, uint32(n+1))
	}
	return kbin.AppendInt32(dst, int32(n))
}

func appendEmptyTags(dst []byte, flex bool) []byte {
	if flex {
		return append(dst, 0)
	}
	return dst
}
