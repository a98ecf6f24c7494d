// Package pixelmatch compares two images pixel by pixel the way
// mapbox/pixelmatch does (the comparison Playwright's toHaveScreenshot
// uses): a perceptual colour distance in YIQ space (Kotsarenko and Ramos,
// 2010) against a threshold, with anti-aliased pixels detected (Vyšniauskas,
// 2009) and not counted. It is a port of pixelmatch 5/6's algorithm to Go;
// no maintained Go port was found (docs/suite-format.md, assertScreenshot).
package pixelmatch

import (
	"errors"
	"image"
	"image/color"
	"image/draw"
	"math"
)

// Options tune a comparison. The zero value is pixelmatch's defaults.
type Options struct {
	// Threshold is the matching threshold, 0 to 1: smaller is more
	// sensitive. 0 means the default 0.1 (use a tiny value such as 1e-9
	// for an exact comparison).
	Threshold float64
	// IncludeAA counts anti-aliased pixels as different.
	IncludeAA bool
	// Alpha blends the unchanged pixels in the diff image, 0 (white) to 1
	// (as they are); 0 means the default 0.1.
	Alpha float64
}

// Colours of the diff image.
var (
	DiffColor = color.RGBA{255, 0, 0, 255}   // a pixel that differs
	AAColor   = color.RGBA{255, 255, 0, 255} // an anti-aliased pixel, not counted
)

// ErrSize is returned for images of different sizes.
var ErrSize = errors.New("pixelmatch: the images differ in size")

// Compare returns how many pixels of a and b differ, and a diff image:
// the unchanged pixels faded to grey, the different ones red, the
// anti-aliased ones yellow. It returns ErrSize when their bounds differ in
// size.
func Compare(a, b image.Image, o Options) (int, *image.RGBA, error) {
	if a.Bounds().Dx() != b.Bounds().Dx() || a.Bounds().Dy() != b.Bounds().Dy() {
		return 0, nil, ErrSize
	}
	if o.Threshold <= 0 {
		o.Threshold = 0.1
	}
	if o.Alpha <= 0 {
		o.Alpha = 0.1
	}
	img1, img2 := toRGBA(a), toRGBA(b)
	w, h := img1.Rect.Dx(), img1.Rect.Dy()
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	// The maximum acceptable square distance between two colours: 35215
	// is the maximum possible value of the YIQ difference metric.
	maxDelta := 35215 * o.Threshold * o.Threshold
	diff := 0
	for y := range h {
		for x := range w {
			pos := y*img1.Stride + x*4
			delta := colorDelta(img1.Pix, img2.Pix, pos, pos, false)
			if math.Abs(delta) > maxDelta {
				if !o.IncludeAA && (antialiased(img1, x, y, w, h, img2) || antialiased(img2, x, y, w, h, img1)) {
					out.SetRGBA(x, y, AAColor)
				} else {
					out.SetRGBA(x, y, DiffColor)
					diff++
				}
				continue
			}
			// Unchanged: a faded grey of the pixel of a.
			val := uint8(blend(grayPixel(img1.Pix, pos), o.Alpha*float64(img1.Pix[pos+3])/255))
			out.SetRGBA(x, y, color.RGBA{val, val, val, 255})
		}
	}
	return diff, out, nil
}

func toRGBA(m image.Image) *image.RGBA {
	if r, ok := m.(*image.RGBA); ok && r.Rect.Min == (image.Point{}) {
		return r
	}
	b := m.Bounds()
	r := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(r, r.Rect, m, b.Min, draw.Src)
	return r
}

// antialiased reports whether the pixel at (x1, y1) of img is likely
// anti-aliasing: of its 8 neighbours at most two have the same colour, it
// has both darker and brighter neighbours, and the darkest or the
// brightest of them lies in a region of flat colour ("has many siblings")
// in both images.
func antialiased(img *image.RGBA, x1, y1, w, h int, img2 *image.RGBA) bool {
	x0, y0, x2, y2, zeroes := neighbours(x1, y1, w, h)
	pos := y1*img.Stride + x1*4
	var mn, mx float64
	var minX, minY, maxX, maxY int
	for x := x0; x <= x2; x++ {
		for y := y0; y <= y2; y++ {
			if x == x1 && y == y1 {
				continue
			}
			// The brightness delta between the pixel and its neighbour.
			delta := colorDelta(img.Pix, img.Pix, pos, y*img.Stride+x*4, true)
			switch {
			case delta == 0:
				zeroes++
				if zeroes > 2 {
					return false // more than two siblings of the same colour
				}
			case delta < mn:
				mn, minX, minY = delta, x, y
			case delta > mx:
				mx, maxX, maxY = delta, x, y
			}
		}
	}
	if mn == 0 || mx == 0 {
		return false // no darker or no brighter neighbour
	}
	return (hasManySiblings(img, minX, minY, w, h) && hasManySiblings(img2, minX, minY, w, h)) ||
		(hasManySiblings(img, maxX, maxY, w, h) && hasManySiblings(img2, maxX, maxY, w, h))
}

// neighbours is the 3×3 window around (x1, y1) clipped to a w×h image,
// from (x0, y0) to (x2, y2), and the siblings a pixel starts with: one
// when it lies on the image's edge (as pixelmatch counts it), else none.
func neighbours(x1, y1, w, h int) (x0, y0, x2, y2, zeroes int) {
	x0, y0 = max(x1-1, 0), max(y1-1, 0)
	x2, y2 = min(x1+1, w-1), min(y1+1, h-1)
	if x1 == x0 || x1 == x2 || y1 == y0 || y1 == y2 {
		zeroes = 1
	}
	return x0, y0, x2, y2, zeroes
}

// hasManySiblings reports whether the pixel at (x1, y1) has more than two
// neighbours of exactly its colour.
func hasManySiblings(img *image.RGBA, x1, y1, w, h int) bool {
	x0, y0, x2, y2, zeroes := neighbours(x1, y1, w, h)
	pos := y1*img.Stride + x1*4
	for x := x0; x <= x2; x++ {
		for y := y0; y <= y2; y++ {
			if x == x1 && y == y1 {
				continue
			}
			pos2 := y*img.Stride + x*4
			if img.Pix[pos] == img.Pix[pos2] && img.Pix[pos+1] == img.Pix[pos2+1] && img.Pix[pos+2] == img.Pix[pos2+2] && img.Pix[pos+3] == img.Pix[pos2+3] {
				zeroes++
			}
			if zeroes > 2 {
				return true
			}
		}
	}
	return false
}

// colorDelta is the squared YIQ distance between the colours at k (of
// img1) and m (of img2), negative when the second is lighter; with
// yOnly, only the brightness difference.
func colorDelta(img1, img2 []uint8, k, m int, yOnly bool) float64 {
	r1, g1, b1, a1 := float64(img1[k]), float64(img1[k+1]), float64(img1[k+2]), float64(img1[k+3])
	r2, g2, b2, a2 := float64(img2[m]), float64(img2[m+1]), float64(img2[m+2]), float64(img2[m+3])
	if a1 == a2 && r1 == r2 && g1 == g2 && b1 == b2 {
		return 0
	}
	if a1 < 255 {
		a1 /= 255
		r1, g1, b1 = blend(r1, a1), blend(g1, a1), blend(b1, a1)
	}
	if a2 < 255 {
		a2 /= 255
		r2, g2, b2 = blend(r2, a2), blend(g2, a2), blend(b2, a2)
	}
	y1, y2 := rgb2y(r1, g1, b1), rgb2y(r2, g2, b2)
	y := y1 - y2
	if yOnly {
		return y
	}
	i := rgb2i(r1, g1, b1) - rgb2i(r2, g2, b2)
	q := rgb2q(r1, g1, b1) - rgb2q(r2, g2, b2)
	delta := 0.5053*y*y + 0.299*i*i + 0.1957*q*q
	if y1 > y2 {
		return -delta
	}
	return delta
}

func rgb2y(r, g, b float64) float64 { return r*0.29889531 + g*0.58662247 + b*0.11448223 }
func rgb2i(r, g, b float64) float64 { return r*0.59597799 - g*0.27417610 - b*0.32180189 }
func rgb2q(r, g, b float64) float64 { return r*0.21147017 - g*0.52261711 + b*0.31114694 }

// blend blends c with white by alpha a.
func blend(c, a float64) float64 { return 255 + (c-255)*a }

func grayPixel(img []uint8, i int) float64 {
	return rgb2y(float64(img[i]), float64(img[i+1]), float64(img[i+2]))
}
