package step

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/llm"
)

// With DUET_LLM_VISION=true an AI step also shows the model a screenshot of
// the page (the viewport) beside its accessibility tree, as an
// OpenAI-compatible image_url content part holding a JPEG data URL. The
// image is bounded: at most aiImageSide pixels on its longer side and
// aiImageBytes bytes. Unlike the text, pixels cannot be scrubbed of the
// run's secrets by value — which is why vision is off unless asked for.

const (
	// aiImageSide bounds the longer side of the screenshot a model is
	// shown, in pixels.
	aiImageSide = 1280
	// aiImageBytes bounds the JPEG a model is shown.
	aiImageBytes = 256 << 10
	// aiImageTokens is what an image counts in a call's token estimate
	// (a 1280-pixel image costs about 800 tokens at OpenAI's high detail).
	aiImageTokens = 1000
)

// see adds a screenshot of the page to the first user message of msgs
// (the one showing the page) when the model is to see it; a message that
// already has one (a second round of the same question) keeps it.
func (a *aiRun) see(ctx context.Context, msgs []llm.Message) error {
	if a.cfg == nil || !a.cfg.Vision {
		return nil
	}
	for i := range msgs {
		if msgs[i].Role != llm.RoleUser {
			continue
		}
		if len(msgs[i].Images) > 0 {
			return nil
		}
		p, err := a.env.Page(ctx)
		if err != nil {
			return err
		}
		shot, err := p.Screenshot(ctx, false)
		if err != nil {
			return err
		}
		url, err := visionImage(shot)
		if err != nil {
			return duet.WrapError(duet.CodeBrowserError, err, "%s: the page's screenshot cannot be shown to the model: %v", a.st.Kind, err)
		}
		msgs[i].Images = []string{url}
		return nil
	}
	return nil
}

// visionImage turns a PNG screenshot into the JPEG data URL a model is
// shown, within aiImageSide and aiImageBytes.
func visionImage(pngData []byte) (string, error) {
	img, err := png.Decode(bytes.NewReader(pngData))
	if err != nil {
		return "", err
	}
	b := img.Bounds()
	k := 1
	for max(b.Dx(), b.Dy()) > aiImageSide*k {
		k++
	}
	for {
		small := shrink(img, k)
		for _, q := range []int{75, 55, 35} {
			var out bytes.Buffer
			if err := jpeg.Encode(&out, small, &jpeg.Options{Quality: q}); err != nil {
				return "", err
			}
			if out.Len() <= aiImageBytes {
				return "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(out.Bytes()), nil
			}
		}
		if k > 64 {
			return "", fmt.Errorf("the screenshot does not fit in %d bytes", aiImageBytes)
		}
		k *= 2
	}
}

// shrink returns img k times smaller on each side, each pixel the mean of
// its k×k block (img itself when k is 1).
func shrink(img image.Image, k int) image.Image {
	if k <= 1 {
		return img
	}
	b := img.Bounds()
	w, h := max(b.Dx()/k, 1), max(b.Dy()/k, 1)
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			var r, g, bl, n uint32
			for dy := range k {
				for dx := range k {
					px, py := b.Min.X+x*k+dx, b.Min.Y+y*k+dy
					if px >= b.Max.X || py >= b.Max.Y {
						continue
					}
					cr, cg, cb, _ := img.At(px, py).RGBA()
					r, g, bl, n = r+cr, g+cg, bl+cb, n+1
				}
			}
			out.SetRGBA(x, y, color.RGBA{R: uint8(r / n >> 8), G: uint8(g / n >> 8), B: uint8(bl / n >> 8), A: 0xff})
		}
	}
	return out
}

// shownMessage is a message as its transcript keeps it: an image by what
// it was, not its bytes.
type shownMessage struct {
	Role    string   `json:"role"`
	Content string   `json:"content"`
	Images  []string `json:"images,omitempty"`
}

// shown is msgs as the transcript keeps them.
func shown(msgs []llm.Message) []shownMessage {
	out := make([]shownMessage, len(msgs))
	for i, m := range msgs {
		out[i] = shownMessage{Role: m.Role, Content: m.Content}
		for _, u := range m.Images {
			out[i].Images = append(out[i].Images, fmt.Sprintf("a screenshot of the page (JPEG, %d bytes as a data URL)", len(u)))
		}
	}
	return out
}
