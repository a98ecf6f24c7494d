package trace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/duet-test/duet"
)

// Video formats a trace's replay is exported to.
const (
	VideoWebM = "webm" // VP8, what browsers play
	VideoMP4  = "mp4"  // H.264, what everything else plays
)

// VideoOptions bound an export of a trace's replay.
type VideoOptions struct {
	// FFmpeg is the ffmpeg binary; "" looks for ffmpeg on PATH.
	FFmpeg string
	// Timeout bounds the encoding (0: DefaultVideoTimeout); ffmpeg is
	// killed past it.
	Timeout time.Duration
	// MaxBytes bounds the video (0: DefaultVideoBytes); ffmpeg stops
	// writing there and the export fails with TOO_LARGE.
	MaxBytes int64
}

// Defaults of VideoOptions.
const (
	DefaultVideoTimeout       = 2 * time.Minute
	DefaultVideoBytes   int64 = 64 << 20
)

// encoders bounds the ffmpeg processes of this instance: encoding takes a
// core while it lasts, and the runs come first.
var encoders = make(chan struct{}, 2)

// Video encodes the screencast frames of the trace a (its replay, as the
// tester would have seen the run) as a webm or mp4 video with ffmpeg, each
// frame held until the next one came. Errors: INVALID_ARGUMENT (format),
// NOT_FOUND (the trace kept no frame), FFMPEG_NOT_FOUND (no ffmpeg on this
// instance), TIMEOUT, TOO_LARGE, CANCELLED, INTERNAL (ffmpeg failed).
func Video(ctx context.Context, a *Archive, format string, o VideoOptions) ([]byte, error) {
	var codec []string
	switch format {
	case VideoWebM:
		codec = []string{"-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "1M", "-f", "webm"}
	case VideoMP4:
		codec = []string{"-c:v", "libx264", "-preset", "veryfast", "-crf", "28", "-movflags", "+faststart", "-f", "mp4"}
	default:
		return nil, duet.Errorf(duet.CodeInvalidArgument, "video format: want webm or mp4, got %.40q", format)
	}
	frames := append([]Frame(nil), a.Trace.Frames...)
	sort.SliceStable(frames, func(i, j int) bool { return frames[i].AtMs < frames[j].AtMs })
	if len(frames) == 0 && a.Trace.NoReplay {
		return nil, duet.Errorf(duet.CodeNotFound, "the trace of case %s recorded no replay to make a video of: a first attempt under on-failure records none unless DUET_TRACE_REPLAY=always (its retries do, and so do the modes on and on-first-retry)", a.Trace.CaseKey)
	}
	if len(frames) == 0 {
		return nil, duet.Errorf(duet.CodeNotFound, "the trace of case %s has no screencast frames to make a video of (its case ran no browser step, or the trace left them out to stay within its bound)", a.Trace.CaseKey)
	}
	bin := o.FFmpeg
	if bin == "" {
		bin = "ffmpeg"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, duet.WrapError(duet.CodeFFmpegNotFound, err, "exporting a video needs ffmpeg, and this Duet instance has none (%s): install it where Duet runs (apt-get install ffmpeg) — the trace viewer's replay shows the same frames without it", bin)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultVideoTimeout
	}
	maxBytes := o.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultVideoBytes
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	select {
	case encoders <- struct{}{}:
		defer func() { <-encoders }()
	case <-ctx.Done():
		return nil, videoCtxErr(ctx, timeout)
	}

	dir, err := os.MkdirTemp("", "duet-video-*")
	if err != nil {
		return nil, &duet.Error{Code: duet.CodeInternal, Message: "cannot export the video", Op: "trace.Video", Err: err}
	}
	defer os.RemoveAll(dir)
	// The concat demuxer's list: each frame for as long as the page showed
	// it, the last one for the rest of the case (at most 2 s); the last
	// file is named twice so that its duration counts.
	var list strings.Builder
	list.WriteString("ffconcat version 1.0\n")
	last := ""
	for i, f := range frames {
		data, _, err := a.File(f.File)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("f%06d%s", i, filepath.Ext(f.File))
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, &duet.Error{Code: duet.CodeInternal, Message: "cannot export the video", Op: "trace.Video", Err: err}
		}
		hold := int64(500)
		if i+1 < len(frames) {
			hold = frames[i+1].AtMs - f.AtMs
		} else if end := a.Trace.DurationMs - f.AtMs; end > 0 {
			hold = min(end, 2000)
		}
		hold = max(hold, 40) // the concat demuxer's images tick at 25 a second
		fmt.Fprintf(&list, "file %s\nduration %s\n", name, strconv.FormatFloat(float64(hold)/1000, 'f', 3, 64))
		last = name
	}
	fmt.Fprintf(&list, "file %s\n", last)
	if err := os.WriteFile(filepath.Join(dir, "frames.ffconcat"), []byte(list.String()), 0o600); err != nil {
		return nil, &duet.Error{Code: duet.CodeInternal, Message: "cannot export the video", Op: "trace.Video", Err: err}
	}
	out := filepath.Join(dir, "video."+format)
	args := []string{"-nostdin", "-hide_banner", "-loglevel", "error", "-f", "concat", "-i", "frames.ffconcat",
		// A frame per screencast frame, at its time (variable rate: a
		// short-lived frame is not dropped, a still page costs nothing).
		"-vf", "scale=trunc(iw/2)*2:trunc(ih/2)*2,format=yuv420p", "-fps_mode", "vfr", "-an",
		"-fs", strconv.FormatInt(maxBytes, 10)}
	args = append(append(args, codec...), "-y", out)
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{b: &stderr, left: 4096}
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, videoCtxErr(ctx, timeout)
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, &duet.Error{Code: duet.CodeInternal, Message: "ffmpeg could not encode the video: " + firstLine(stderr.String()), Op: "trace.Video", Err: err}
		}
		return nil, &duet.Error{Code: duet.CodeInternal, Message: "cannot run ffmpeg", Op: "trace.Video", Err: err}
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, &duet.Error{Code: duet.CodeInternal, Message: "ffmpeg wrote no video", Op: "trace.Video", Err: err}
	}
	// -fs stops ffmpeg at the bound: a video that reached it is cut.
	if int64(len(data)) >= maxBytes {
		return nil, duet.Errorf(duet.CodeTooLarge, "the video of case %s passed the bound of %d bytes: download the trace (its replay frames) instead", a.Trace.CaseKey, maxBytes)
	}
	return data, nil
}

func videoCtxErr(ctx context.Context, timeout time.Duration) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return duet.Errorf(duet.CodeTimeout, "exporting the video took longer than %s", timeout)
	}
	return duet.WrapError(duet.CodeCancelled, ctx.Err(), "exporting the video: cancelled")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	if s == "" {
		return "it exited with an error"
	}
	return s
}

// limitedBuffer keeps the first bytes written to it.
type limitedBuffer struct {
	b    *bytes.Buffer
	left int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.left > 0 {
		n := min(len(p), l.left)
		l.b.Write(p[:n])
		l.left -= n
	}
	return len(p), nil
}
