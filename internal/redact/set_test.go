package redact

import (
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSetScrubsByValue(t *testing.T) {
	t.Parallel()
	const (
		cred   = "cred-6b1f0c-static"
		access = "at-91c2e7d4aa"
		note   = "nt-7730fe15c"
		text   = "tx-51ad09e2b7"
		cookie = "ck-e2c41f09"
		header = "hd-0a9b8c7d6e"
	)
	s := NewSet()
	s.Add("Bearer " + cred)
	s.AddHeader("Set-Cookie", "sid="+cookie+"; Path=/; HttpOnly")
	s.AddHeader("X-Api-Key", header)
	s.AddHeader("Content-Type", "application/json-but-not-secret")
	s.Learn(map[string]any{
		"status": 200.0,
		"body": map[string]any{
			"access_token": access,
			"note":         "use Bearer " + note + " next time",
			"items":        []any{map[string]any{"id": 1.0}},
		},
		"text": "ok\ntoken=" + text + "&expires=3600",
	})
	got := s.Value(map[string]any{
		"copy":     access,
		"innocent": map[string]any{"memo": "the credential is " + cred, "n": 3.0, "b": true},
		"list":     []any{"x " + note + " y", text, cookie},
		"headers":  map[string]string{"X-Echo": header, "Authorization": "anything"},
		cred:       "a key that is a secret",
	})
	want := map[string]any{
		"copy":     Mask,
		"innocent": map[string]any{"memo": "the credential is " + Mask, "n": 3.0, "b": true},
		"list":     []any{"x " + Mask + " y", Mask, Mask},
		"headers":  map[string]any{"X-Echo": Mask, "Authorization": Mask},
		Mask:       "a key that is a secret",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Value (-want +got):\n%s", diff)
	}
	for _, v := range []string{cred, access, note, text, cookie, header} {
		if out := s.Scrub("<title>" + v + "</title> /path/" + v); strings.Contains(out, v) {
			t.Errorf("Scrub left %s in %q", v, out)
		}
	}
	if out := s.Scrub("application/json-but-not-secret"); out != "application/json-but-not-secret" {
		t.Errorf("a header that is not secret was scrubbed: %q", out)
	}
}

// Words that follow a scheme or a key in ordinary text are not taken for
// secrets: scrubbing them would mangle every later message.
func TestSetIgnoresWords(t *testing.T) {
	t.Parallel()
	s := NewSet()
	s.LearnText(`it asks for Bearer authentication; Authorization: Bearer; token: expired; "password": "", secret=null`)
	s.Learn(map[string]any{"token": "none", "password": "", "Authorization": "Bearer", "sig": 12.0})
	s.Add("abc")
	if n := s.Len(); n != 0 {
		t.Fatalf("learned %d values from ordinary words", n)
	}
	const msg = "it asks for Bearer authentication; the token expired"
	if got := s.Scrub(msg); got != msg {
		t.Fatalf("got %q", got)
	}
}

func TestSetForms(t *testing.T) {
	t.Parallel()
	s := NewSet()
	basic := base64.StdEncoding.EncodeToString([]byte("alice:pa55word-x"))
	s.AddHeader("Authorization", "Basic "+basic)
	s.Add("a+b/c=d&e-9")
	for in, want := range map[string]string{
		"user alice:pa55word-x":       "user " + Mask,
		"password pa55word-x":         "password " + Mask,
		"b64 " + basic:                "b64 " + Mask,
		"/cb?t=a%2Bb%2Fc%3Dd%26e-9":   "/cb?t=" + Mask,
		"raw a+b/c=d&e-9 and more":    "raw " + Mask + " and more",
		"nothing secret in this line": "nothing secret in this line",
	} {
		if got := s.Scrub(in); got != want {
			t.Errorf("Scrub(%q): got %q, want %q", in, got, want)
		}
	}
	// A secret that contains another is masked whole.
	s2 := NewSet()
	s2.Add("abcdef", "xxabcdefyy")
	if got := s2.Scrub("xxabcdefyy abcdef"); got != Mask+" "+Mask {
		t.Errorf("nested secrets: got %q", got)
	}
	var nilSet *Set
	if nilSet.Scrub("x") != "x" {
		t.Error("a nil set scrubbed")
	}
}

func TestSetConcurrent(t *testing.T) {
	t.Parallel()
	s := NewSet()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				s.Add(strings.Repeat(string(rune('a'+i)), 6) + string(rune('0'+j%10)))
				_ = s.Scrub("aaaaaa0 bbbbbb1")
			}
		})
	}
	wg.Wait()
	if got := s.Scrub("aaaaaa0"); got != Mask {
		t.Fatalf("got %q", got)
	}
}

// BenchmarkSetValue measures scrubbing a 64 KiB response (the largest
// output the engine keeps) with 3 and 20 known secrets.
//
//	go test ./internal/redact -run '^$' -bench SetValue
func BenchmarkSetValue(b *testing.B) {
	for _, n := range []int{3, 20} {
		b.Run(fmt.Sprintf("secrets=%d", n), func(b *testing.B) { benchmarkSetValue(b, n) })
	}
}

func benchmarkSetValue(b *testing.B, n int) {
	s := NewSet()
	for i := range n {
		s.Add("secret-" + strings.Repeat(string(rune('a'+i)), 12) + "-0123456789")
	}
	items := make([]any, 0, 512)
	for i := range 512 {
		items = append(items, map[string]any{"id": float64(i), "name": "an item with an ordinary name", "note": "nothing to hide here, " + strings.Repeat("x", 64)})
	}
	v := map[string]any{"status": 200.0, "body": map[string]any{"items": items}}
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Value(v)
	}
}
