package kernel

// Event is an armed socket that fired: its fd, the arming's generation,
// and which way: In (it has bytes, or its peer closed or failed: a read
// arming) and Out (it takes more, or failed: a write arming).
type Event struct {
	Fd, Gen int32
	In, Out bool
}
