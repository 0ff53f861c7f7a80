package relay

import "github.com/flexway/flexway/decide"

// Queue is the FIFO of a connection's requests that still owe the client
// an answer: forwarded ones waiting for the broker, and the gateway's own
// answers waiting behind them (Kafka answers in request order).
// Pendings are recycled through Free: the steady state allocates nothing.
// Call on the connection's loop only.
type Queue struct {
	ring    []*decide.Pending
	head, n int
	// Free is where Pendings are recycled: shared by the queues of one
	// loop, so that an idle connection holds none (nil: the queue's own).
	Free *Pendings
}

// Pendings is a free list of Pendings, for the queues of one goroutine.
type Pendings struct{ free []*decide.Pending }

// Get returns an empty Pending to fill (recycled when possible).
func (q *Queue) Get() *decide.Pending {
	if q.Free == nil {
		q.Free = &Pendings{}
	}
	f := q.Free
	if k := len(f.free); k > 0 {
		p := f.free[k-1]
		f.free[k-1] = nil
		f.free = f.free[:k-1]
		return p
	}
	return &decide.Pending{}
}

// Put gives back a Pending that was not pushed, or was popped.
func (q *Queue) Put(p *decide.Pending) {
	if q.Free == nil {
		q.Free = &Pendings{}
	}
	p.Local = p.Local[:0]
	q.Free.free = append(q.Free.free, p)
}

// Push appends p at the tail.
func (q *Queue) Push(p *decide.Pending) {
	if q.n == len(q.ring) {
		nr := make([]*decide.Pending, max(8, 2*len(q.ring)))
		for i := 0; i < q.n; i++ {
			nr[i] = q.ring[(q.head+i)%len(q.ring)]
		}
		q.ring, q.head = nr, 0
	}
	q.ring[(q.head+q.n)%len(q.ring)] = p
	q.n++
}

// Front returns the oldest entry, or nil.
func (q *Queue) Front() *decide.Pending {
	if q.n == 0 {
		return nil
	}
	return q.ring[q.head]
}

// Pop removes the oldest entry.
func (q *Queue) Pop() *decide.Pending {
	p := q.ring[q.head]
	q.ring[q.head] = nil
	q.head = (q.head + 1) % len(q.ring)
	q.n--
	return p
}

// Len is the number of entries.
func (q *Queue) Len() int { return q.n }

// Each calls fn for each entry, oldest first.
func (q *Queue) Each(fn func(*decide.Pending)) {
	for i := 0; i < q.n; i++ {
		fn(q.ring[(q.head+i)%len(q.ring)])
	}
}

// Mismatch says why a broker answer is not the one owed next.
type Mismatch uint8

const (
	Matched Mismatch = iota
	// MismatchUnknown: no request in flight has the answer's correlation id.
	MismatchUnknown
	// MismatchLater: the answer is to a request forwarded after the one owed
	// first (a broker answers in request order: this one does not).
	MismatchLater
)

// String is the cause the engine logs when it closes the connection.
func (m Mismatch) String() string {
	switch m {
	case Matched:
		return "matched"
	case MismatchLater:
		return "the answer to a later request"
	}
	return "unknown correlation id"
}

// Match finds the request a broker answer with correlation id corr
// answers: it must be the oldest entry, forwarded (not one of the
// gateway's own answers), with that id. Anything else is a broker that
// does not answer in request order: the connection is closed (the cause
// says which). Match does not pop: the caller pops once the answer is out.
func (q *Queue) Match(corr int32) (*decide.Pending, Mismatch) {
	if p := q.Front(); p != nil && len(p.Local) == 0 && p.UpCorr == corr {
		return p, Matched
	}
	for i := 0; i < q.n; i++ {
		if p := q.ring[(q.head+i)%len(q.ring)]; len(p.Local) == 0 && p.UpCorr == corr {
			return nil, MismatchLater
		}
	}
	return nil, MismatchUnknown
}
