package trace_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/redact"
	"github.com/duet-test/duet/internal/trace"
	"github.com/duet-test/duet/internal/trace/ffmpegtest"
)

func sampleArchive(t *testing.T) *trace.Archive {
	t.Helper()
	meta, c := sample(t)
	zipped, _, err := trace.Build(meta, c, redact.NewSet(), 0)
	if err != nil {
		t.Fatal(err)
	}
	a, err := trace.Open(zipped)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// probe is what ffprobe says of a video.
type probe struct {
	Streams []struct {
		CodecName string `json:"codec_name"`
		Width     int    `json:"width"`
		Height    int    `json:"height"`
	} `json:"streams"`
	Format struct {
		Duration string `json:"duration"`
	} `json:"format"`
}

// shown decodes every frame of a video with ffmpeg and returns its time
// and its mean luma (0 black, 255 white).
func shown(t *testing.T, ffmpeg, video string) (times []float64, luma []int) {
	t.Helper()
	out, err := exec.Command(ffmpeg, "-hide_banner", "-i", video, "-vf", "showinfo", "-f", "null", "-").CombinedOutput()
	if err != nil {
		t.Fatalf("decoding %s: %v %s", video, err, out)
	}
	for _, m := range showinfo.FindAllSubmatch(out, -1) {
		at, _ := strconv.ParseFloat(string(m[1]), 64)
		y, _ := strconv.Atoi(string(m[2]))
		times, luma = append(times, at), append(luma, y)
	}
	return times, luma
}

var showinfo = regexp.MustCompile(`pts_time:([0-9.]+)[^\n]*?mean:\[(\d+)`)

// TestVideo: the replay's frames become a webm (VP8) and an mp4 (H.264)
// that ffprobe reads, of the trace's size and length, each frame shown
// for as long as the page showed it: white, then black from 400 ms, gray
// from 450 ms to the end.
func TestVideo(t *testing.T) {
	ffmpeg := ffmpegtest.Require(t)
	ffprobe, err := exec.LookPath("ffprobe")
	if err != nil {
		t.Fatal("ffmpeg without ffprobe")
	}
	a := sampleArchive(t)
	for format, codec := range map[string]string{trace.VideoWebM: "vp8", trace.VideoMP4: "h264"} {
		data, err := trace.Video(t.Context(), a, format, trace.VideoOptions{})
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		path := filepath.Join(t.TempDir(), "replay."+format)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(ffprobe, "-v", "error", "-show_entries", "stream=codec_name,width,height:format=duration", "-of", "json", path).Output()
		if err != nil {
			t.Fatalf("%s: ffprobe: %v", format, err)
		}
		var p probe
		if err := json.Unmarshal(out, &p); err != nil || len(p.Streams) != 1 {
			t.Fatalf("%s: ffprobe says %s (%v)", format, out, err)
		}
		s := p.Streams[0]
		d, _ := strconv.ParseFloat(p.Format.Duration, 64)
		if s.CodecName != codec || s.Width != 40 || s.Height != 30 || d < 0.7 || d > 1.1 {
			t.Errorf("%s: %s %dx%d for %.2fs, want %s 40x30 for about 0.85s", format, s.CodecName, s.Width, s.Height, d, codec)
		}
		// White from the start, black from 300 ms, gray from 350 ms: the
		// first frame came 100 ms into the case.
		times, luma := shown(t, ffmpeg, path)
		if len(times) < 3 || len(times) > 4 {
			t.Fatalf("%s: frames at %v (luma %v), want 3 (and the last held)", format, times, luma)
		}
		for i, want := range []struct{ at, lo, hi float64 }{{0, 0, 0.01}, {1, 0.28, 0.34}, {2, 0.34, 0.42}} {
			if times[i] < want.lo || times[i] > want.hi {
				t.Errorf("%s: frame %d at %.2fs, want %.2f–%.2fs", format, i, times[i], want.lo, want.hi)
			}
		}
		if last := luma[len(luma)-1]; luma[0] < 200 || luma[1] > 40 || luma[2] < 100 || luma[2] > 160 || last < 100 || last > 160 {
			t.Errorf("%s: luma %v, want white, black, gray", format, luma)
		}
	}
	// Bounded: in bytes and in time.
	if _, err := trace.Video(t.Context(), a, trace.VideoWebM, trace.VideoOptions{MaxBytes: 200}); duet.ErrorCode(err) != duet.CodeTooLarge {
		t.Errorf("a video past its bound: %v, want TOO_LARGE", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := trace.Video(ctx, a, trace.VideoWebM, trace.VideoOptions{}); duet.ErrorCode(err) != duet.CodeCancelled && duet.ErrorCode(err) != duet.CodeTimeout {
		t.Errorf("a cancelled export: %v", err)
	}
}

// TestVideoWithoutFFmpeg: where there is no ffmpeg the export fails with
// FFMPEG_NOT_FOUND saying what to do; a trace without frames, or another
// format, are refused before ffmpeg is looked for.
func TestVideoWithoutFFmpeg(t *testing.T) {
	t.Parallel()
	a := sampleArchive(t)
	_, err := trace.Video(t.Context(), a, trace.VideoWebM, trace.VideoOptions{FFmpeg: filepath.Join(t.TempDir(), "ffmpeg")})
	if duet.ErrorCode(err) != duet.CodeFFmpegNotFound || !bytes.Contains([]byte(duet.ErrorMessage(err)), []byte("apt-get install ffmpeg")) {
		t.Errorf("no ffmpeg: %v", err)
	}
	if _, err := trace.Video(t.Context(), a, "gif", trace.VideoOptions{}); duet.ErrorCode(err) != duet.CodeInvalidArgument {
		t.Errorf("gif: %v", err)
	}
	a.Trace.Frames = nil
	if _, err := trace.Video(t.Context(), a, trace.VideoMP4, trace.VideoOptions{}); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("no frames: %v", err)
	}
	a.Trace.NoReplay = true
	if _, err := trace.Video(t.Context(), a, trace.VideoMP4, trace.VideoOptions{}); duet.ErrorCode(err) != duet.CodeNotFound ||
		!strings.Contains(duet.ErrorMessage(err), "DUET_TRACE_REPLAY=always") {
		t.Errorf("no replay recorded: %v", err)
	}
}
