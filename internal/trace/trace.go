// Package trace is the evidence a test case leaves for the person who
// debugs it: per step the page's screenshots before and after, its DOM
// snapshot, the console messages and uncaught errors, and the network
// requests the step caused; a replay of the page's screencast frames; the
// network as a HAR 1.2 file. A browser driver records a [Capture] while a
// case runs (internal/browser's sessions do); the engine decides, by the
// [Mode], whether to keep it, and [Build] turns it into one zip file — the
// trace — that the artifact store keeps beside the run's report:
//
//	trace.json      the Trace: steps, console, network rows, frames (file names)
//	network.har     the network of the case, HAR 1.2
//	index.html      the viewer (with viewer.js and viewer.css): open it from
//	                the unzipped folder, or through the console, which serves
//	                the same files
//	shots/, dom/, frames/   the screenshots, DOM snapshots and replay frames
//
// Everything text in a trace is scrubbed of the run's secrets by value
// (Build takes the run's redact.Set), DOM snapshots have their scripts
// stripped and are shown only in a sandboxed frame, and a trace is bounded
// in bytes: what does not fit is left out, and Trace.Cut says what and
// where.
package trace

import (
	"time"

	"github.com/duet-test/duet"
)

// Mode says when a case records and keeps a trace. Values are wire values
// (suite files, start_test_run, DUET_TRACE): add, never rename.
type Mode string

// Modes.
const (
	// Off records nothing.
	Off Mode = "off"
	// OnFailure records every case and keeps the trace of a case that did
	// not pass (the default).
	OnFailure Mode = "on-failure"
	// OnFirstRetry records and keeps the trace of the first retry of a
	// failed case (its second attempt), whether it passes or fails, as
	// Playwright does: a first attempt records nothing, and a case without
	// retries keeps no trace.
	OnFirstRetry Mode = "on-first-retry"
	// On keeps every case's trace.
	On Mode = "on"
)

// Modes lists the modes, in the order the docs give them.
func Modes() []Mode { return []Mode{Off, OnFailure, OnFirstRetry, On} }

// ParseMode returns the mode named s; "" is "" (no choice: the next level
// decides). Returns INVALID_ARGUMENT for another name.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "", Off, OnFailure, OnFirstRetry, On:
		return m, nil
	}
	return "", duet.Errorf(duet.CodeInvalidArgument, "unknown trace mode %q: use off, on-failure, on-first-retry or on", s)
}

// Resolve returns the first mode set of run, task and def (the run's
// choice, then the task's, then the deployment's), OnFailure when none is.
func Resolve(run, task, def Mode) Mode {
	for _, m := range []Mode{run, task, def} {
		if m != "" {
			return m
		}
	}
	return OnFailure
}

// Records reports whether an attempt of a case records a trace in mode m:
// retry is its retry number (0: the first attempt; 1: the first retry).
func (m Mode) Records(retry int) bool {
	switch m {
	case Off:
		return false
	case OnFirstRetry:
		return retry == 1
	}
	return true
}

// Replay says which recorded attempts of a case also record its replay
// (the page's screencast frames, and the steps' screenshots taken from
// them). Values are wire values (DUET_TRACE_REPLAY): add, never rename.
//
// The screencast is most of what a recording costs the browser: while it
// runs, Chromium captures every frame the page paints, whether the trace
// keeps it or not (a passing case under on-failure keeps none). Without it
// an attempt still records the page's console, its network, the DOM after
// each browser step and the failing step's screenshot.
type Replay string

// Replays.
const (
	// ReplayKept records the replay of the attempts whose trace is likely
	// to be kept: every attempt under on and on-first-retry, and under
	// on-failure the retries (an attempt after a failure) but not a first
	// attempt, which most often passes and keeps nothing (the default).
	ReplayKept Replay = "kept"
	// ReplayAlways records the replay of every attempt that records a
	// trace, the first ones under on-failure included.
	ReplayAlways Replay = "always"
)

// Replays reports whether an attempt that records a trace in mode m also
// records its replay under policy p: retry is its retry number (0: the
// first attempt).
func (m Mode) Replays(retry int, p Replay) bool {
	return p == ReplayAlways || m != OnFailure || retry > 0
}

// Keep reports whether the trace of an attempt of a case that ended is
// kept: passed says whether it passed, retry is its retry number (0: the
// first attempt; 1: the first retry).
func (m Mode) Keep(passed bool, retry int) bool {
	switch m {
	case On:
		return true
	case OnFailure:
		return !passed
	case OnFirstRetry:
		return retry == 1
	}
	return false
}

// Version is the version of the trace format this package writes.
const Version = 1

// Trace is trace.json: what a case did, step by step, with what the page
// showed and did. Times are milliseconds from the start of the recording.
type Trace struct {
	Version int `json:"version"`
	Case
	Mode       Mode           `json:"mode"`
	Status     duet.RunStatus `json:"status"`
	ErrorCode  duet.Code      `json:"errorCode,omitempty"`
	Error      string         `json:"error,omitempty"`
	StartedAt  time.Time      `json:"startedAt"`
	DurationMs int64          `json:"durationMs"`
	Viewport   Viewport       `json:"viewport"`
	Steps      []Step         `json:"steps"`
	Console    []ConsoleLine  `json:"console"`
	Network    []Request      `json:"network"`
	Frames     []Frame        `json:"frames"`
	// NoReplay says the attempt recorded no replay (Replay): a first
	// attempt under on-failure, unless DUET_TRACE_REPLAY=always.
	NoReplay bool `json:"noReplay,omitempty"`
	// Cut is set when the trace left something out to stay within its
	// bound: the viewer and the MCP summary say so.
	Cut *Cut `json:"cut,omitempty"`
}

// Case names the execution a Trace or a Summary is of; its fields come
// first in both.
type Case struct {
	RunID       string `json:"runId"`
	ExecutionID string `json:"executionId"`
	CaseKey     string `json:"caseKey"`
	CaseTitle   string `json:"caseTitle"`
}

// Viewport is the page's size in CSS pixels.
type Viewport struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

// Step is one step of the case.
type Step struct {
	Index     int            `json:"index"`
	Kind      duet.StepKind  `json:"kind"`
	Name      string         `json:"name"`
	Status    duet.RunStatus `json:"status"`
	ErrorCode duet.Code      `json:"errorCode,omitempty"`
	Error     string         `json:"error,omitempty"`
	StartMs   int64          `json:"startMs"`
	EndMs     int64          `json:"endMs"`
	// Before and After are screenshot files ("frames/0003.jpg",
	// "shots/02-failure.png"); Before only for actions.
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// DOM is the file of the page's DOM snapshot after the step
	// ("dom/02.html"), scripts stripped.
	DOM string `json:"dom,omitempty"`
	// URL is the page's URL after the step.
	URL string `json:"url,omitempty"`
}

// ConsoleLine is a console message or an uncaught page error.
type ConsoleLine struct {
	AtMs int64  `json:"atMs"`
	Step int    `json:"step"` // the step it belongs to (-1: before the first)
	Type string `json:"type"` // log, info, warning, error, debug, exception
	Text string `json:"text"`
	URL  string `json:"url,omitempty"`
	Line int64  `json:"line,omitempty"`
}

// Request is one network request of the page.
type Request struct {
	ID              string            `json:"id"`
	AtMs            int64             `json:"atMs"`
	Step            int               `json:"step"`
	Method          string            `json:"method"`
	URL             string            `json:"url"`
	Type            string            `json:"type,omitempty"` // Document, XHR, Fetch, Script, Image, ...
	Status          int               `json:"status"`         // 0: no response
	StatusText      string            `json:"statusText,omitempty"`
	MIME            string            `json:"mime,omitempty"`
	RequestHeaders  map[string]string `json:"requestHeaders,omitempty"`
	ResponseHeaders map[string]string `json:"responseHeaders,omitempty"`
	PostData        string            `json:"postData,omitempty"`
	Body            string            `json:"body,omitempty"`
	BodyBase64      bool              `json:"bodyBase64,omitempty"`
	// BodyNote says why the body is missing or cut ("cut at 65536 bytes",
	// "not kept by the browser").
	BodyNote string `json:"bodyNote,omitempty"`
	// EncodedBytes is what came over the wire; BodyBytes the body's size.
	EncodedBytes int64   `json:"encodedBytes"`
	BodyBytes    int64   `json:"bodyBytes"`
	DurationMs   float64 `json:"durationMs"`
	// WaitMs is the time to the first byte of the response.
	WaitMs float64 `json:"waitMs,omitempty"`
	Failed string  `json:"failed,omitempty"` // the browser's error text of a request that failed
	Curl   string  `json:"curl,omitempty"`   // the request as a curl command, secrets redacted
}

// Frame is one frame of the replay.
type Frame struct {
	AtMs int64  `json:"atMs"`
	File string `json:"file"`
}

// Cut says what a trace left out to stay within its bound.
type Cut struct {
	MaxBytes int64  `json:"maxBytes"`
	Reason   string `json:"reason"`
	// Frames, Snapshots, Screenshots and Bodies count what was left out.
	Frames      int `json:"frames,omitempty"`
	Snapshots   int `json:"snapshots,omitempty"`
	Screenshots int `json:"screenshots,omitempty"`
	Bodies      int `json:"bodies,omitempty"`
	// FromStep is the first step that lost evidence (-1: only the replay).
	FromStep int `json:"fromStep"`
}
