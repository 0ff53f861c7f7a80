//go:build linux && !flexway_portable

package kernel

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Watcher says when sockets take more: the one writable signal. The loop
// arms a socket (EPOLLOUT, one shot) when bytes wait for it; the watcher's
// goroutine (Run) hands what fired to deliver, one call per wake. Each
// arming has a generation: the owner ignores a stale event (a socket
// closed or armed again since). One per loop, made at its first use.
//
// Run waits in Go's poller, where its epoll set is registered (an epoll fd
// is readable when its set has events), not in a blocking epoll_wait: a
// goroutine in a system call holds its P, and with every P so held (the
// gnet loop in its own epoll_wait, the watcher in this one) Go's sysmon
// takes them back every 20 µs and keeps waking at that pace; on two cores
// that cost a producer through the gateway 0.3 CPU s per GiB more than the
// relaying itself (2026-12-05).
type Watcher struct {
	epfd, evfd int
	gen        int32
	f          *os.File // epfd in Go's poller (nil: Run blocks in epoll_wait)
}

// NewWatcher makes a watcher; Run serves it until Stop.
func NewWatcher() (*Watcher, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	evfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err == nil {
		err = unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(evfd)})
	}
	if err != nil {
		_ = unix.Close(epfd)
		if evfd > 0 {
			_ = unix.Close(evfd)
		}
		return nil, err
	}
	w := &Watcher{epfd: epfd, evfd: evfd}
	if unix.SetNonblock(epfd, true) == nil {
		w.f = os.NewFile(uintptr(epfd), "watcher") // non-blocking: registered with the poller
	}
	return w, nil
}

// Arm asks to be told once when fd takes more; it returns the arming's
// generation. On the loop (the owner's goroutine) only.
func (w *Watcher) Arm(fd int) (int32, error) {
	w.gen++
	ev := unix.EpollEvent{Events: unix.EPOLLOUT | unix.EPOLLONESHOT, Fd: int32(fd), Pad: w.gen}
	err := unix.EpollCtl(w.epfd, unix.EPOLL_CTL_MOD, fd, &ev)
	if err == unix.ENOENT {
		err = unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, fd, &ev)
	}
	return w.gen, err
}

// Run waits for armed sockets and hands each wake's events to deliver,
// until Stop; it then closes the watcher's fds. Its own goroutine.
func (w *Watcher) Run(deliver func([]Event)) {
	defer func() {
		if w.f != nil {
			_ = w.f.Close()
		} else {
			_ = unix.Close(w.epfd)
		}
		_ = unix.Close(w.evfd)
	}()
	evs := make([]unix.EpollEvent, 128)
	wait := w.waiter(evs)
	for {
		n, err := wait()
		if err != nil {
			// Only Stop's event ends the goroutine (it then closes the
			// fds: Stop never writes to a closed one). With its set open
			// epoll_wait fails only by EINTR: the armed sockets wait
			// for the next call, the tick does not look at them.
			if err != unix.EINTR {
				time.Sleep(10 * time.Millisecond)
			}
			continue
		}
		var fired []Event
		stop := false
		for _, ev := range evs[:n] {
			if ev.Fd == int32(w.evfd) {
				stop = true
				continue
			}
			fired = append(fired, Event{Fd: ev.Fd, Gen: ev.Pad})
		}
		if len(fired) > 0 {
			deliver(fired)
		}
		if stop {
			return
		}
	}
}

// waiter returns Run's wait: in Go's poller where the epoll set is
// registered there, else a blocking epoll_wait.
func (w *Watcher) waiter(evs []unix.EpollEvent) func() (int, error) {
	block := func() (int, error) { return unix.EpollWait(w.epfd, evs, -1) }
	if w.f == nil {
		return block
	}
	rc, err := w.f.SyscallConn()
	if err != nil {
		return block
	}
	var n int
	var werr error
	ready := func(fd uintptr) bool {
		n, werr = unix.EpollWait(int(fd), evs, 0)
		return n > 0 || (werr != nil && werr != syscall.EINTR)
	}
	polled := true
	return func() (int, error) {
		if polled {
			if err := rc.Read(ready); err == nil {
				return n, werr
			}
			polled = false // not pollable after all: block from now on
		}
		return block()
	}
}

// Stop ends Run, once.
func (w *Watcher) Stop() {
	one := [8]byte{1}
	_, _ = unix.Write(w.evfd, one[:])
}
