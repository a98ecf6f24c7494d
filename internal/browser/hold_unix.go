//go:build unix

package browser

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/target"
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
	forward := func(msg []byte) error { _, err := to.Write(msg); return err }
	if h.lateAttach > 0 {
		late := &lateReplies{to: to, d: h.lateAttach, wait: map[target.SessionID]chan struct{}{}}
		forward = late.forward
	}
	for {
		msg, err := br.ReadBytes(0)
		if len(msg) > 0 && !h.deliverRaw(msg) {
			if werr := forward(msg); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// lateReplies forwards the browser's messages to chromedp, but for the
// replies to chromedp's attaches (their result is the session's id), which
// it holds back until the first paused request of that session has gone
// to chromedp, or for d: a test's way to make chromedp take a session
// after its page ran (Options.lateAttachReply).
type lateReplies struct {
	mu   sync.Mutex // one message at a time on to
	to   *os.File
	d    time.Duration
	wait map[target.SessionID]chan struct{} // under mu: the replies held
}

func (l *lateReplies) forward(msg []byte) error {
	if bytes.Contains(msg, []byte(`"result":{"sessionId":"`)) {
		if sid := rawSessionID(msg); sid != "" {
			ch := make(chan struct{})
			l.mu.Lock()
			l.wait[sid] = ch
			l.mu.Unlock()
			go func() {
				t := time.NewTimer(l.d)
				defer t.Stop()
				select {
				case <-ch:
				case <-t.C:
				}
				l.mu.Lock()
				defer l.mu.Unlock()
				delete(l.wait, sid)
				l.to.Write(msg)
			}()
			return nil
		}
	}
	l.mu.Lock()
	_, err := l.to.Write(msg)
	var held chan struct{}
	if bytes.Contains(msg, []byte(`"Fetch.requestPaused"`)) {
		sid := rawSessionID(msg)
		if held = l.wait[sid]; held != nil {
			delete(l.wait, sid)
		}
	}
	l.mu.Unlock()
	if held != nil {
		close(held)
	}
	return err
}

// sendingRaw tells h of chromedp's command msg before it leaves
// (sending): its session while an adoption is under way (read from the
// bytes), and a CSS.enable (decoded) while h watches early requests.
func (h *holder) sendingRaw(msg []byte) {
	if h.adopting.Load() > 0 {
		if sid := rawSessionID(msg); sid != "" {
			h.noteSent(sid)
		}
	}
	if h.nearly.Load() == 0 || !bytes.Contains(msg, []byte(`"CSS.enable"`)) {
		return
	}
	var m cdproto.Message
	if jsonv2.Unmarshal(bytes.TrimSuffix(msg, []byte{0}), &m, chromedp.DefaultUnmarshalOptions) == nil {
		h.sending(m.Method, m.SessionID)
	}
}

// rawSessionID is the sessionId of chromedp's message msg as it marshals
// it (a string of letters and digits, never escaped), or "".
func rawSessionID(msg []byte) target.SessionID {
	const key = `"sessionId":"`
	i := bytes.Index(msg, []byte(key))
	if i < 0 {
		return ""
	}
	rest := msg[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j <= 0 {
		return ""
	}
	return target.SessionID(rest[:j])
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
