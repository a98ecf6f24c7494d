package mcpserver

import (
	"bytes"
	"io"
	"regexp"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/sdkjson"
)

// How a request body is read on /mcp/http.
//
// The go-sdk decodes JSON-RPC leniently (fast/envelope.go): it lets a
// later duplicate key win, reads ids as float64 (so 1.5 becomes 1 and
// 2^53+1 becomes 2^53 in the reply) and accepts trailing bytes after the
// first value. So every body of a POST passes checkBody first, whoever
// answers it — the fast path or the SDK: it must be exactly one JSON value
// that RFC 7493 accepts (valid UTF-8, no lone surrogates, no duplicate key
// at any depth), nested at most 1000 deep, and every message's id must
// come back exactly as it was sent (a string, or an integer of at most
// 2^53−1 in magnitude written without fraction or exponent). What passes
// is then read once with the SDK's own decoder and rules (fast.Read), for
// the door and the fast path alike, so they cannot disagree with the SDK
// on what a request says.

// maxDepth is the SDK's nesting limit (internal/json.defaultMaxDepth).
const maxDepth = sdkjson.MaxDepth

// maxExactID is the largest id magnitude a float64 — how the SDK reads a
// numeric id — holds exactly (JavaScript's Number.MAX_SAFE_INTEGER).
const maxExactID = 1<<53 - 1

var integerRe = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)$`)

// checkBody is the strict reading every body passes before either path
// sees it. Returns PARSE_ERROR or INVALID_REQUEST.
//
// It is one pass of jsontext's decoder (which checks RFC 7493 as it reads:
// UTF-8, duplicate names, the grammar) reading the body's one value to its
// end and the id of every message on the way, then the SDK's depth count.
// When a body has several faults the first of these wins, as when each
// was a pass of its own: not valid JSON, then too deep, then a bad id.
func checkBody(body []byte) error {
	d := decoders.Get().(*bodyDecoder)
	defer d.put()
	d.buf = *bytes.NewBuffer(body) // a bytes.Buffer: the decoder reads body in place, without a copy
	d.dec.Reset(&d.buf)
	idErr, ok := readBody(&d.dec)
	switch {
	case !ok:
		return duet.Errorf(duet.CodeParseError, "the body is not one valid JSON value (RFC 7493: UTF-8, no duplicate keys)")
	case depthExceeds(body, maxDepth):
		return duet.Errorf(duet.CodeParseError, "the body nests deeper than %d levels", maxDepth)
	}
	return idErr
}

// bodyDecoder is checkBody's decoder and the buffer it reads, reused.
type bodyDecoder struct {
	buf bytes.Buffer
	dec jsontext.Decoder
}

var decoders = sync.Pool{New: func() any { return new(bodyDecoder) }}

func (d *bodyDecoder) put() {
	d.buf = bytes.Buffer{} // keep no body alive
	d.dec.Reset(&d.buf)
	decoders.Put(d)
}

// readBody reads one JSON value and the end of the input from dec,
// checking the id of the message it is, or of each message of the batch
// it is. ok is whether the input is exactly one valid value; idErr the
// first id that cannot be echoed exactly.
func readBody(dec *jsontext.Decoder) (idErr error, ok bool) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, false
	}
	switch tok.Kind() {
	case '{':
		if idErr, ok = readMessage(dec); !ok {
			return nil, false
		}
	case '[':
		for dec.PeekKind() != ']' {
			if dec.PeekKind() != '{' {
				if dec.SkipValue() != nil {
					return nil, false
				}
				continue
			}
			if _, err := dec.ReadToken(); err != nil {
				return nil, false
			}
			e, ok := readMessage(dec)
			if !ok {
				return nil, false
			}
			if idErr == nil {
				idErr = e
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, false
		}
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, false
	}
	return idErr, true
}

// readMessage reads the members of one message object (its '{' already
// read) and its '}', and checks its id.
func readMessage(dec *jsontext.Decoder) (idErr error, ok bool) {
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil, false
		}
		if name.String() != "id" {
			if dec.SkipValue() != nil {
				return nil, false
			}
			continue
		}
		v, err := dec.ReadValue()
		if err != nil {
			return nil, false
		}
		if e := checkID(v); idErr == nil {
			idErr = e
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, false
	}
	return idErr, true
}

// checkID accepts the ids the reply can echo exactly: null (no id), a
// string, or an integer of at most 2^53−1 in magnitude in plain notation.
func checkID(v jsontext.Value) error {
	switch v.Kind() {
	case 'n', '"':
		return nil
	case '0':
		s := string(v)
		if integerRe.MatchString(s) && s != "-0" {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= -maxExactID && n <= maxExactID {
				return nil
			}
		}
		return duet.Errorf(duet.CodeInvalidRequest, "the request id %.40s cannot be echoed exactly: use a string, or an integer of at most 2^53-1 without fraction or exponent", s)
	}
	return duet.Errorf(duet.CodeInvalidRequest, "the request id must be a string or an integer")
}

// depthExceeds is the SDK's own nesting check (sdkjson), so that the door
// refuses exactly the bodies the SDK refuses.
func depthExceeds(data []byte, max int) bool { return sdkjson.DepthExceeds(data, max) }
