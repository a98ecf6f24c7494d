package mcpclient

import (
	"bytes"
	"encoding/json"

	sjson "github.com/segmentio/encoding/json"

	"github.com/duet-test/duet/internal/sdkjson"
)

// sdkUnmarshal decodes data as the go-sdk decodes what a server sends
// (sdkjson). Reading a reply again with anything else — encoding/json
// matches keys case-insensitively and refuses trailing data — could take
// other bytes for the result than the ones the SDK decoded
// (TestRepliesAreReadAsTheSDKReadsThem).
func sdkUnmarshal(data []byte, v any) error { return sdkjson.Unmarshal(data, v) }

// sdkParse is sdkUnmarshal with extra segmentio flags that change how the
// value is stored, never what is read (DontCopyRawMessage).
func sdkParse(data []byte, v any, flags sjson.ParseFlags) error {
	return sdkjson.UnmarshalFlags(data, v, flags)
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
