package kernel

// Event is an armed socket that takes more: its fd and the arming's
// generation.
type Event struct{ Fd, Gen int32 }
