//go:build unix

package browser

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"syscall"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/chromedp"
)

// relay is the option that gives h its handle on the pipes of a local
// browser: the browser reads its commands from a pipe of the pool, which
// copies chromedp's commands into it one whole message at a time (each
// ends with a zero byte) and puts h's in between; and it writes its
// replies and events to a pipe of the pool, which copies them to chromedp
// but for the replies to h's commands. Without the pipes (a browser reached
// by a WebSocket) h has no handle, and the browser holds no page.
func (h *holder) relay() chromedp.ExecAllocatorOption {
	return chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
		setDeathSignal(cmd) // chromedp's own setting, which a ModifyCmdFunc replaces
		if err := h.relayPipes(cmd); err != nil {
			h.mu.Lock()
			h.write = nil
			h.mu.Unlock()
		}
	})
}

// relayPipes puts the pool's pipes between chromedp and the browser of cmd.
func (h *holder) relayPipes(cmd *exec.Cmd) error {
	if len(cmd.ExtraFiles) != 2 || cmd.ExtraFiles[0] == nil || cmd.ExtraFiles[1] == nil {
		return errors.New("the browser has no DevTools pipes")
	}
	// chromedp closes its copies of the browser's ends once the browser
	// has started; the pool keeps its own.
	var ends [2]*os.File
	for i, f := range cmd.ExtraFiles {
		fd, err := syscall.Dup(int(f.Fd()))
		if err != nil {
			closeAll(ends[:i]...)
			return err
		}
		syscall.CloseOnExec(fd)
		ends[i] = os.NewFile(uintptr(fd), "devtools-chromedp")
	}
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		closeAll(ends[:]...)
		return err
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		closeAll(ends[0], ends[1], cmdR, cmdW)
		return err
	}
	cmd.ExtraFiles = []*os.File{cmdR, evW}
	h.mu.Lock()
	h.write = func(m *cdproto.Message) error {
		b, err := jsonv2.Marshal(m, chromedp.DefaultMarshalOptions)
		if err != nil {
			return err
		}
		_, err = cmdW.Write(append(b, 0))
		return err
	}
	h.mu.Unlock()
	go h.pumpCommands(ends[0], cmdW, cmdR, evW)
	go h.pumpEvents(evR, ends[1])
	return nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// pumpCommands copies chromedp's commands from from to the browser's pipe
// to, until either end closes. children are the browser's ends of the
// pool's pipes, which the pool closes once the browser has started
// (chromedp writes its first command then), so that the pipes break when
// the browser exits.
func (h *holder) pumpCommands(from, to *os.File, children ...*os.File) {
	defer func() {
		h.mu.Lock()
		h.write = nil
		to.Close()
		h.mu.Unlock()
		from.Close()
	}()
	br := bufio.NewReaderSize(from, 64<<10)
	for first := true; ; first = false {
		msg, err := br.ReadBytes(0)
		if first {
			closeAll(children...)
		}
		if len(msg) > 0 {
			h.sendingRaw(msg)
			h.mu.Lock()
			_, werr := to.Write(msg)
			h.mu.Unlock()
			if werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// pumpEvents copies the browser's messages from from to chromedp's pipe to,
// but for the replies to h's commands, which it delivers.
func (h *holder) pumpEvents(from, to *os.File) {
	defer to.Close()
	defer from.Close()
	br := bufio.NewReaderSize(from, 64<<10)
	for {
		msg, err := br.ReadBytes(0)
		if len(msg) > 0 && !h.deliverRaw(msg) {
			if _, werr := to.Write(msg); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// sendingRaw tells h of chromedp's command msg before it leaves
// (sending); only a CSS.enable is decoded, and only while h watches early
// requests.
func (h *holder) sendingRaw(msg []byte) {
	if h.nearly.Load() == 0 || !bytes.Contains(msg, []byte(`"CSS.enable"`)) {
		return
	}
	var m cdproto.Message
	if jsonv2.Unmarshal(bytes.TrimSuffix(msg, []byte{0}), &m, chromedp.DefaultUnmarshalOptions) == nil {
		h.sending(m.Method, m.SessionID)
	}
}

// deliverRaw delivers msg when it is a reply to a command of h. A reply is
// a short message without a method; only those are decoded, and the
// paused requests while h watches early ones (watchEarly).
func (h *holder) deliverRaw(msg []byte) bool {
	early := h.nearly.Load() > 0 && bytes.Contains(msg, []byte(`"Fetch.requestPaused"`))
	if !early && (len(msg) > 4096 || bytes.Contains(msg, []byte(`"method"`))) {
		return false
	}
	var m cdproto.Message
	if jsonv2.Unmarshal(bytes.TrimSuffix(msg, []byte{0}), &m, chromedp.DefaultUnmarshalOptions) != nil {
		return false
	}
	return h.deliver(&m)
}
