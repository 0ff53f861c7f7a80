package relay

import "github.com/flexway/flexway/decide"

// Queue is the FIFO of a connection's requests that still owe the client
// an answer: forwarded ones waiting for the broker, and the gateway's own
// answers waiting behind them (Kafka answers in request order).
// Pendings are recycled: the steady state allocates nothing.
// Call on the connection's loop only.
type Queue struct {
	ring    []*decide.Pending
	head, n int
	free    []*decide.Pending
}

// Get returns an empty Pending to fill (recycled when possible).
func (q *Queue) Get() *decide.Pending {
	if k := len(q.free); k > 0 {
		p := q.free[k-1]
		q.free = q.free[:k-1]
		return p
	}
	return &decide.Pending{}
}

// Put gives back a Pending that was not pushed, or was popped.
func (q *Queue) Put(p *decide.Pending) {
	p.Local = p.Local[:0]
	q.free = append(q.free, p)
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
