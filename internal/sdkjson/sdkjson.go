// Package sdkjson reads JSON exactly as the MCP go-sdk reads it, for the
// places where Duet reads bytes the SDK also reads (a request before the
// SDK's session, a reply after it): one reader, so that Duet never takes
// other values from the same bytes than the SDK (case-sensitive member
// names, the first value only, the SDK's nesting limit).
//
// The go-sdk's internal/json.Unmarshal refuses nesting deeper than
// MaxDepth, then runs a segmentio Decoder with
// DontMatchCaseInsensitiveStructFields, whose Decode is Parse of the first
// value with that flag (the rest is ignored). Parse directly spares the
// Decoder's 32 KiB buffer.
package sdkjson

import (
	"errors"

	sjson "github.com/segmentio/encoding/json"
)

// MaxDepth is the go-sdk's internal/json defaultMaxDepth.
const MaxDepth = 1000

// ErrMaxDepth is what Unmarshal returns for data nested deeper than
// MaxDepth.
var ErrMaxDepth = errors.New("json: exceeded maximum nesting depth")

// Unmarshal decodes data into v as the go-sdk's internal/json.Unmarshal.
func Unmarshal(data []byte, v any) error { return UnmarshalFlags(data, v, 0) }

// UnmarshalFlags is Unmarshal with extra segmentio flags that change how
// the value is stored, never what is read (DontCopyRawMessage).
func UnmarshalFlags(data []byte, v any, flags sjson.ParseFlags) error {
	if DepthExceeds(data, MaxDepth) {
		return ErrMaxDepth
	}
	return Parse(data, v, flags)
}

// Parse is Unmarshal without the nesting check, for data already checked
// (a body that passed the strict check of its transport).
func Parse(data []byte, v any, flags sjson.ParseFlags) error {
	_, err := sjson.Parse(data, v, sjson.DontMatchCaseInsensitiveStructFields|flags)
	return err
}

// DepthExceeds is the go-sdk's internal/json.checkMaxDepth: one pass that
// counts '{' and '[' against '}' and ']' outside strings and reports
// whether the count passes max.
func DepthExceeds(data []byte, max int) bool {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > max {
				return true
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return false
}
