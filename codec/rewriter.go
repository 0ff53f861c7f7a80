package codec

// Rewriter holds the scratch space of one connection's rewrites, reused
// from frame to frame so that the steady state allocates nothing.
// Not safe for concurrent use: one per connection, used on its loop.
type Rewriter struct {
	Vec     Vec
	Dropped Dropped
	names   [][]byte
	codes   []int16

	// BrokerThrottle is the throttle_time_ms the broker wrote in the last
	// Produce or Fetch answer rewritten (0 before v1): its own quota on the
	// gateway's principal (issue 8).
	BrokerThrottle int32
}

// Dropped lists the topics a rewriter left out of a forwarded request, with
// the code that answers each of their partitions. It owns its bytes: it
// outlives the request frame, until the response is written.
type Dropped struct {
	Topics []DroppedTopic
}

// DroppedTopic is one topic left out, by the client's name.
type DroppedTopic struct {
	Name       []byte
	Code       int16
	Partitions []int32
}

// Reset empties the list.
func (d *Dropped) Reset() { d.Topics = d.Topics[:0] }

// Len is the number of topics dropped.
func (d *Dropped) Len() int { return len(d.Topics) }

func (d *Dropped) add(name []byte, code int16) *DroppedTopic {
	d.Topics = append(d.Topics, DroppedTopic{Name: append([]byte(nil), name...), Code: code})
	return &d.Topics[len(d.Topics)-1]
}

// Clone returns a copy that owns its memory (the Rewriter reuses its own).
func (d *Dropped) Clone() Dropped {
	if len(d.Topics) == 0 {
		return Dropped{}
	}
	c := Dropped{Topics: make([]DroppedTopic, len(d.Topics))}
	copy(c.Topics, d.Topics)
	return c
}

func (w *Rewriter) resetScratch() {
	w.names = w.names[:0]
	w.codes = w.codes[:0]
	w.Dropped.Reset()
}
