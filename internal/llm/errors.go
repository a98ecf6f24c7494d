package llm

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxProviderText is how many runes of a provider's error message an error
// keeps.
const maxProviderText = 300

// errorText returns the error message in a response body, with its type and
// code, or "" when the body holds none. It understands the OpenAI form
// {"error":{"message","type","code"}}, {"error":"text"}, and the
// {"message"} and {"detail"} bodies of servers built on other frameworks.
func errorText(body []byte) string {
	var w struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Detail  json.RawMessage `json:"detail"`
		Type    json.RawMessage `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(body, &w) != nil {
		return ""
	}
	if e := w.Error; len(e) > 0 && e[0] == '{' {
		var inner struct {
			Message json.RawMessage `json:"message"`
			Type    json.RawMessage `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		if json.Unmarshal(e, &inner) == nil {
			return withTypeCode(scalarText(inner.Message), scalarText(inner.Type), scalarText(inner.Code))
		}
	}
	if s := scalarText(w.Error); s != "" {
		return s
	}
	if s := scalarText(w.Message); s != "" {
		return withTypeCode(s, scalarText(w.Type), scalarText(w.Code))
	}
	if len(w.Detail) > 0 && string(w.Detail) != "null" {
		if s := scalarText(w.Detail); s != "" {
			return s
		}
		return string(w.Detail)
	}
	return ""
}

// withTypeCode appends "(type t, code c)" for whichever of t and c is set.
func withTypeCode(msg, typ, code string) string {
	var extra []string
	if typ != "" {
		extra = append(extra, "type "+typ)
	}
	if code != "" {
		extra = append(extra, "code "+code)
	}
	switch {
	case len(extra) == 0:
		return msg
	case msg == "":
		return strings.Join(extra, ", ")
	}
	return msg + " (" + strings.Join(extra, ", ") + ")"
}

// scalarText returns a JSON string's value or a number's text, and "" for
// anything else.
func scalarText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// errorCode returns the "code" (or, failing that, the "type") of an
// OpenAI-style error body, such as "insufficient_quota".
func errorCode(body []byte) string {
	var w struct {
		Error struct {
			Type json.RawMessage `json:"type"`
			Code json.RawMessage `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &w) != nil {
		return ""
	}
	if c := scalarText(w.Error.Code); c != "" {
		return c
	}
	return scalarText(w.Error.Type)
}

// sanitize makes provider text fit for an error message: secret removed,
// control characters and runs of white space collapsed to one space, and at
// most maxRunes runes kept.
func sanitize(text, secret string, maxRunes int) string {
	if secret != "" {
		text = strings.ReplaceAll(text, secret, redacted)
	}
	text = strings.ToValidUTF8(text, "\uFFFD")
	var b strings.Builder
	space := false
	for _, r := range text {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return truncate(b.String(), maxRunes)
}

// truncate keeps at most n runes of s, marking a cut with "…".
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "…"
		}
		i++
	}
	return s
}
