package pixelmatch_test

import (
	"errors"
	"image"
	"image/color"
	"testing"

	"github.com/duet-test/duet/internal/pixelmatch"
)

func filled(w, h int, c color.RGBA) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			m.SetRGBA(x, y, c)
		}
	}
	return m
}

var (
	white = color.RGBA{255, 255, 255, 255}
	black = color.RGBA{0, 0, 0, 255}
)

// edge is black left of x = 10, white from there on.
func edge() *image.RGBA {
	m := filled(20, 20, white)
	for y := range 20 {
		for x := range 10 {
			m.SetRGBA(x, y, black)
		}
	}
	return m
}

func TestCompare(t *testing.T) {
	t.Parallel()
	a := filled(20, 20, white)
	if n, diff, err := pixelmatch.Compare(a, filled(20, 20, white), pixelmatch.Options{}); err != nil || n != 0 || diff.Bounds().Dx() != 20 {
		t.Fatalf("identical: %d %v", n, err)
	}
	b := filled(20, 20, white)
	b.SetRGBA(5, 7, color.RGBA{255, 0, 0, 255})
	n, diff, err := pixelmatch.Compare(a, b, pixelmatch.Options{})
	if err != nil || n != 1 || diff.RGBAAt(5, 7) != pixelmatch.DiffColor {
		t.Fatalf("one red pixel: %d %v %v", n, err, diff.RGBAAt(5, 7))
	}
	if g := diff.RGBAAt(0, 0); g.R != g.G || g.R < 240 {
		t.Errorf("an unchanged white pixel in the diff: %v, want a faded grey", g)
	}

	// The same edge, anti-aliased: a grey column where it was white.
	aa := edge()
	for y := range 20 {
		aa.SetRGBA(10, y, color.RGBA{128, 128, 128, 255})
	}
	if n, diff, _ := pixelmatch.Compare(edge(), aa, pixelmatch.Options{}); n != 0 || diff.RGBAAt(10, 5) != pixelmatch.AAColor {
		t.Errorf("an anti-aliased edge: %d different, the pixel %v, want 0 and yellow", n, diff.RGBAAt(10, 5))
	}
	if n, _, _ := pixelmatch.Compare(edge(), aa, pixelmatch.Options{IncludeAA: true}); n != 20 {
		t.Errorf("an anti-aliased edge with IncludeAA: %d, want the column of 20", n)
	}
	// A moved edge is not anti-aliasing: a whole black column.
	moved := edge()
	for y := range 20 {
		moved.SetRGBA(10, y, black)
	}
	if n, _, _ := pixelmatch.Compare(edge(), moved, pixelmatch.Options{}); n == 0 {
		t.Error("a moved edge was taken for anti-aliasing")
	}

	// The threshold: a slight shade passes the default, not a strict one.
	shade := filled(20, 20, color.RGBA{250, 250, 250, 255})
	if n, _, _ := pixelmatch.Compare(a, shade, pixelmatch.Options{}); n != 0 {
		t.Errorf("a slight shade at the default threshold: %d", n)
	}
	if n, _, _ := pixelmatch.Compare(a, shade, pixelmatch.Options{Threshold: 0.01}); n != 400 {
		t.Errorf("a slight shade at threshold 0.01: %d, want 400", n)
	}
	if _, _, err := pixelmatch.Compare(a, filled(21, 20, white), pixelmatch.Options{}); !errors.Is(err, pixelmatch.ErrSize) {
		t.Errorf("sizes: %v", err)
	}
	// Transparent pixels blend with white, as in pixelmatch.
	if n, _, _ := pixelmatch.Compare(a, filled(20, 20, color.RGBA{0, 0, 0, 0}), pixelmatch.Options{}); n != 0 {
		t.Errorf("transparent against white: %d, want 0", n)
	}
}
