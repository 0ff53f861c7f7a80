//go:build !linux || flexway_portable

package kernel

// Watcher: without epoll, no watcher; what waits for a socket is written
// at the loop's tick.
type Watcher struct{}

// NewWatcher reports ErrUnsupported.
func NewWatcher() (*Watcher, error) { return nil, ErrUnsupported }

func (w *Watcher) Arm(fd int) (int32, error) { return 0, ErrUnsupported }
func (w *Watcher) Run(deliver func([]Event)) {}
func (w *Watcher) Stop()                     {}
