package sdkjson_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/sdkjson"
)

// TestReadsAsTheSDK: member names match exactly (a "Content" is not a
// "content"), the first value is read and the rest ignored, and nesting
// deeper than the SDK's limit is refused before anything is read — what
// the go-sdk's internal/json does, end to end in
// TestRequestsAreReadAsTheSDKReadsThem and TestRepliesAreReadAsTheSDKReadsThem.
func TestReadsAsTheSDK(t *testing.T) {
	var v struct {
		Content string `json:"content"`
	}
	if err := sdkjson.Unmarshal([]byte(`{"Content":"wrong","content":"right"} trailing`), &v); err != nil || v.Content != "right" {
		t.Fatalf("got %q, %v; want the exact member, the rest ignored", v.Content, err)
	}
	var w struct {
		Content string `json:"content"`
	}
	if err := sdkjson.Unmarshal([]byte(`{"CONTENT":"x"}`), &w); err != nil || w.Content != "" {
		t.Fatalf("a member of another case: got %q, %v", w.Content, err)
	}
	deep := strings.Repeat("[", sdkjson.MaxDepth+1) + strings.Repeat("]", sdkjson.MaxDepth+1)
	var any1 any
	if err := sdkjson.Unmarshal([]byte(deep), &any1); !errors.Is(err, sdkjson.ErrMaxDepth) {
		t.Fatalf("nesting past %d: got %v", sdkjson.MaxDepth, err)
	}
	ok := strings.Repeat("[", sdkjson.MaxDepth) + strings.Repeat("]", sdkjson.MaxDepth)
	if err := sdkjson.Unmarshal([]byte(ok), &any1); err != nil {
		t.Fatalf("nesting of %d: %v", sdkjson.MaxDepth, err)
	}
	if sdkjson.DepthExceeds([]byte(`["[[[[", {"a": "]]]"}]`), 2) {
		t.Fatal("brackets inside strings counted")
	}
}
