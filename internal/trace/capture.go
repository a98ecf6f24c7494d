package trace

import (
	"time"
)

// Capture is what a browser driver recorded while a case ran: the frames of
// the page's screencast, a mark per browser step (with its DOM snapshot),
// and the console and network of the page. Times are milliseconds from
// Start. Build makes a trace of it.
type Capture struct {
	Start    time.Time
	Viewport Viewport
	Frames   []CapturedFrame
	Marks    []Mark
	Console  []ConsoleLine
	Network  []Request
	// DroppedFrames counts the frames the recorder let go of to stay within
	// its bound (RecordOptions.MaxFrameBytes).
	DroppedFrames int
	// DroppedEvents counts console lines and requests past the recorder's
	// caps.
	DroppedEvents int
	// DroppedSnapshots counts the DOM snapshots of the first steps the
	// recorder let go of to keep those of the last ones within
	// MaxDOMTotalBytes (RecordOptions.MaxDOMTotalBytes).
	DroppedSnapshots int
	MaxDOMTotalBytes int64
	// NoReplay says the recording ran no screencast
	// (RecordOptions.NoReplay): Frames holds only screenshots taken on
	// purpose.
	NoReplay bool
}

// CapturedFrame is one screencast frame (JPEG).
type CapturedFrame struct {
	AtMs int64
	Data []byte
	// Pinned frames are screenshots of a step (before or after it): they
	// stay when the replay is thinned.
	Pinned bool
}

// Mark is what the recorder noted about one browser step.
type Mark struct {
	Index   int
	StartMs int64
	EndMs   int64
	// Before and After index Capture.Frames (-1: none): the frame the page
	// showed when the step began and when it ended.
	Before, After int
	// DOM is the page's DOM after the step, serialised with its scripts
	// stripped; nil when it could not be read.
	DOM []byte
	// DOMNote says why DOM is missing or cut.
	DOMNote string
	URL     string
}

// RecordOptions bound a recording.
type RecordOptions struct {
	// FPS bounds the replay's frame rate; 0 means DefaultFPS.
	FPS int
	// MaxFrameBytes bounds the frames kept in memory for the replay (frames
	// that are a step's screenshot are always kept); 0 means 40 % of
	// DefaultMaxBytes.
	MaxFrameBytes int64
	// MaxDOMBytes bounds one DOM snapshot; 0 means DefaultMaxDOMBytes.
	MaxDOMBytes int
	// MaxDOMTotalBytes bounds the DOM snapshots kept in memory by one
	// recording: past it, the oldest steps' snapshots are let go of (the
	// last steps, a failure's, are what a trace is read for); 0 means
	// 40 % of DefaultMaxBytes. A case of many steps records a snapshot
	// after each under on, and without a replay.
	MaxDOMTotalBytes int64
	// MaxEvents bounds the console lines and the requests, each; 0 means
	// DefaultMaxEvents.
	MaxEvents int
	// Quality is the JPEG quality of the frames, 1 to 100; 0 means 60.
	Quality int
	// FramePercent is the size of the replay's frames against the page's
	// viewport, 1 to 100 %; 0 means DefaultFramePercent. Chromium scales
	// and encodes every frame the page paints: a frame at half size costs
	// it a quarter of the pixels. A step's own screenshot (a failure's
	// evidence) stays at full size.
	FramePercent int
	// NoReplay records no screencast: the trace has no replay, a step's
	// screenshots are only those taken on purpose (a failure's), and the
	// browser captures no frame (see Replay).
	NoReplay bool
}

// Defaults of a recording and of a trace.
const (
	DefaultFPS = 5
	// DefaultFramePercent: Playwright's trace screencast is at most 800
	// pixels on a side; half of a 1280×720 page is 640×360.
	DefaultFramePercent = 50
	DefaultMaxBytes     = 16 << 20
	DefaultMaxDOMBytes  = 1 << 20
	DefaultMaxEvents    = 2000
	// MaxBodyBytes bounds one response body kept in a trace.
	MaxBodyBytes = 64 << 10
)

// WithDefaults returns o with its zero fields set to the defaults.
func (o RecordOptions) WithDefaults() RecordOptions {
	if o.FPS <= 0 {
		o.FPS = DefaultFPS
	}
	if o.MaxFrameBytes <= 0 {
		o.MaxFrameBytes = DefaultMaxBytes * 2 / 5
	}
	if o.MaxDOMBytes <= 0 {
		o.MaxDOMBytes = DefaultMaxDOMBytes
	}
	if o.MaxDOMTotalBytes <= 0 {
		o.MaxDOMTotalBytes = DefaultMaxBytes * 2 / 5
	}
	if o.MaxEvents <= 0 {
		o.MaxEvents = DefaultMaxEvents
	}
	if o.Quality <= 0 || o.Quality > 100 {
		o.Quality = 60
	}
	if o.FramePercent <= 0 || o.FramePercent > 100 {
		o.FramePercent = DefaultFramePercent
	}
	return o
}

// stepAt returns the index of the step that an event at atMs belongs to:
// the last step begun by then, or -1 before the first.
func stepAt(marks []Mark, atMs int64) int {
	step := -1
	for _, m := range marks {
		if m.StartMs <= atMs {
			step = m.Index
		}
	}
	return step
}
