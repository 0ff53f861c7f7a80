package codec

// Vec builds one outgoing frame as a list of slices for a vectored write:
// the bytes the gateway writes itself go to Own, the long runs it forwards
// unchanged (record batches) stay slices of the input frame. Nothing of the
// records is copied.
//
// A Vec is reused from frame to frame (Reset keeps capacity); it is not safe
// for concurrent use. Its references into the input are valid only while
// the input is: write the slices before releasing the input buffer.
type Vec struct {
	Own   []byte
	parts []part
	out   [][]byte
	start int // start in Own of the current own run
	total int
}

type part struct {
	ext      []byte // a slice of the input, or nil for an own run
	off, end int    // the own run's range in Own
}

// refMin is the size under which a forwarded run is copied into Own rather
// than given its own iovec: a small copy is cheaper than one more entry.
const refMin = 512

// Reset empties the Vec and reserves the frame's size prefix.
func (v *Vec) Reset() {
	v.Own = append(v.Own[:0], 0, 0, 0, 0)
	v.parts = v.parts[:0]
	v.out = v.out[:0]
	v.start = 0
	v.total = 0
}

// Ref appends a slice of the input frame without copying it (small slices are copied).
func (v *Vec) Ref(b []byte) {
	if len(b) < refMin {
		v.Own = append(v.Own, b...)
		return
	}
	v.closeOwn()
	v.parts = append(v.parts, part{ext: b})
	v.total += len(b)
}

func (v *Vec) closeOwn() {
	if len(v.Own) > v.start {
		v.parts = append(v.parts, part{off: v.start, end: len(v.Own)})
		v.total += len(v.Own) - v.start
	}
	v.start = len(v.Own)
}

// Len is the frame's length so far, size prefix included.
func (v *Vec) Len() int { return v.total + len(v.Own) - v.start }

// Slices closes the frame: it writes the size prefix and returns the slices
// to write, in order. The result is valid until the next Reset.
func (v *Vec) Slices() [][]byte {
	v.closeOwn()
	PutSize(v.Own, v.total-SizeLen)
	for _, p := range v.parts {
		if p.ext != nil {
			v.out = append(v.out, p.ext)
		} else {
			v.out = append(v.out, v.Own[p.off:p.end])
		}
	}
	return v.out
}
