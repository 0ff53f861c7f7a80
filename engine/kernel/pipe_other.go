//go:build !linux || flexway_portable

package kernel

// Pipe: splice(2) is Linux's; elsewhere no pipe is made and every byte
// goes through the loop's buffers.
type Pipe struct{}

// NewPipe reports ErrUnsupported.
func NewPipe(size int) (*Pipe, error) { return nil, ErrUnsupported }

func (p *Pipe) Size() int                  { return 0 }
func (p *Pipe) Close()                     {}
func (p *Pipe) From(src, n int) int        { return 0 }
func (p *Pipe) To(fd, n int) int           { return n }
func (p *Pipe) Read(b []byte) (int, error) { return 0, ErrUnsupported }
