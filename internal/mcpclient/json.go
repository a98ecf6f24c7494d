package mcpclient

import (
	"bytes"
	"encoding/json"
	"errors"

	sjson "github.com/segmentio/encoding/json"
)

// sdkUnmarshal decodes data as the go-sdk decodes what a server sends: its
// internal/json.Unmarshal refuses nesting deeper than 1000 and then runs a
// segmentio Decoder with DontMatchCaseInsensitiveStructFields, whose Decode
// is Parse of the first value with that flag (the rest is ignored). Reading
// a reply again with anything else — encoding/json matches keys
// case-insensitively and refuses trailing data — could take other bytes for
// the result than the ones the SDK decoded (TestRepliesAreReadAsTheSDKReadsThem).
// Parse directly spares the Decoder's 32 KiB buffer.
func sdkUnmarshal(data []byte, v any) error {
	return sdkParse(data, v, 0)
}

// sdkParse is sdkUnmarshal with extra segmentio flags that change how the
// value is stored, never what is read (DontCopyRawMessage).
func sdkParse(data []byte, v any, flags sjson.ParseFlags) error {
	if err := checkMaxDepth(data, sdkMaxDepth); err != nil {
		return err
	}
	_, err := sjson.Parse(data, v, sjson.DontMatchCaseInsensitiveStructFields|flags)
	return err
}

// sdkMaxDepth is the go-sdk's internal/json defaultMaxDepth.
const sdkMaxDepth = 1000

var errMaxDepth = errors.New("json: exceeded maximum nesting depth")

// checkMaxDepth is the go-sdk's internal/json checkMaxDepth: one pass that
// counts '{' and '[' against '}' and ']' outside strings.
func checkMaxDepth(data []byte, maxDepth int) error {
	var (
		depth    int
		inString bool
		escaped  bool
	)
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
			depth++
			if depth > maxDepth {
				return errMaxDepth
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}

// compact returns raw without insignificant whitespace. raw must be valid
// JSON (a value a parser accepted): it comes back as it is, without a copy,
// when it has no whitespace outside strings, as a server's compact reply
// has.
func compact(raw json.RawMessage) (json.RawMessage, error) {
	inString, escaped := false, false
	for _, c := range raw {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case ' ', '\t', '\r', '\n':
			var b bytes.Buffer
			if err := json.Compact(&b, raw); err != nil {
				return nil, err
			}
			return b.Bytes(), nil
		}
	}
	return raw, nil
}

// encodeArguments encodes a call's arguments once, as the SDK's jsonrpc2
// encoder would (no HTML escaping): the bytes go into the request as they
// are (a json.RawMessage is compacted, not re-encoded), and their length
// is the invocation record's argument size.
func encodeArguments(args map[string]any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(args); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
