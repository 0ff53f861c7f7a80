package engine

// Why a client's reads are paused: each holder of the read pause
// (invariant 20) names its reason; the socket is detached while any reason
// holds and read again when the last one is let go, so a quota's mute and
// a budget's wait never resume each other's pause.
const (
	pauseQuota uint8 = 1 << iota // a KIP-219 throttle (quota.go)
)

// holdReads stops reading the client for why (on its loop, between frames).
// It reports false when the connection cannot be paused now (closed, in its
// TLS handshake): the caller then only stops processing.
func (cl *client) holdReads(why uint8) bool {
	if cl.pauseWhy&why != 0 {
		return true
	}
	if cl.pauseWhy == 0 && cl.pauseReads() == nil {
		return false
	}
	cl.pauseWhy |= why
	return true
}

// releaseReads lets go of why; the client is read again when no reason is
// left.
func (cl *client) releaseReads(why uint8) {
	if cl.pauseWhy&why == 0 {
		return
	}
	cl.pauseWhy &^= why
	if cl.pauseWhy != 0 || cl.closed {
		return
	}
	if p, ok := cl.c.(*pausedConn); ok {
		p.resume()
	}
}
