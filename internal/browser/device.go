package browser

import (
	"maps"
	"slices"
	"strings"

	"github.com/duet-test/duet"
)

// Device is the screen, input and user agent that a Session emulates.
//
// The zero Device means the "desktop" preset.
type Device struct {
	// Name is the preset name, such as "iphone-15". It is informational.
	Name string
	// Width and Height are the viewport size in CSS pixels. Zero means the
	// desktop size, 1280x800.
	Width, Height int
	// DeviceScaleFactor is the ratio of device pixels to CSS pixels
	// (window.devicePixelRatio). Zero means 1.
	DeviceScaleFactor float64
	// Mobile turns on mobile emulation: the viewport meta tag is honoured,
	// scrollbars overlay the page and text autosizing applies.
	Mobile bool
	// Touch turns on touch events ('ontouchstart' in window) and sets
	// navigator.maxTouchPoints to 5.
	Touch bool
	// UserAgent overrides navigator.userAgent and the User-Agent header.
	// Empty keeps the browser's own user agent.
	UserAgent string
}

// DefaultDevice is the name of the preset that an empty name selects.
const DefaultDevice = "desktop"

// Real user agents of the emulated devices, so that sites serve their mobile
// pages.
const (
	iPhoneUA  = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
	iPadUA    = "Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
	androidUA = "Mozilla/5.0 (Linux; Android 14; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36"
)

var presets = map[string]Device{
	"desktop": {
		Name: "desktop", Width: 1280, Height: 800, DeviceScaleFactor: 1,
	},
	"iphone-15": {
		Name: "iphone-15", Width: 393, Height: 852, DeviceScaleFactor: 3,
		Mobile: true, Touch: true, UserAgent: iPhoneUA,
	},
	"pixel-7": {
		Name: "pixel-7", Width: 412, Height: 915, DeviceScaleFactor: 2.625,
		Mobile: true, Touch: true, UserAgent: androidUA,
	},
	"ipad": {
		Name: "ipad", Width: 820, Height: 1180, DeviceScaleFactor: 2,
		Mobile: true, Touch: true, UserAgent: iPadUA,
	},
}

// Devices returns the device presets by name: "desktop" (1280x800),
// "iphone-15", "pixel-7" and "ipad". The map is a copy; changing it changes
// no preset.
func Devices() map[string]Device {
	return maps.Clone(presets)
}

// DeviceNames returns the preset names, sorted.
func DeviceNames() []string {
	return slices.Sorted(maps.Keys(presets))
}

// DeviceByName returns the preset with the given name. The empty name selects
// "desktop". An unknown name gives a *duet.Error with code
// CodeInvalidArgument that lists the valid names.
func DeviceByName(name string) (Device, error) {
	if name == "" {
		name = DefaultDevice
	}
	d, ok := presets[name]
	if !ok {
		return Device{}, duet.Errorf(duet.CodeInvalidArgument,
			"unknown device %q: valid devices are %s", name, strings.Join(DeviceNames(), ", "))
	}
	return d, nil
}

// normalize fills the zero fields of d with the desktop values and checks the
// rest. It returns CodeInvalidArgument for a negative size or scale.
func (d Device) normalize() (Device, error) {
	if d == (Device{}) {
		return presets[DefaultDevice], nil
	}
	if d.Width < 0 || d.Height < 0 || d.DeviceScaleFactor < 0 {
		return Device{}, duet.Errorf(duet.CodeInvalidArgument,
			"device %q: width, height and scale factor must not be negative", d.Name)
	}
	const maxSize = 10000
	if d.Width > maxSize || d.Height > maxSize || d.DeviceScaleFactor > 10 {
		return Device{}, duet.Errorf(duet.CodeInvalidArgument,
			"device %q: viewport %dx%d at scale %g is too large", d.Name, d.Width, d.Height, d.DeviceScaleFactor)
	}
	desktop := presets[DefaultDevice]
	if d.Width == 0 {
		d.Width = desktop.Width
	}
	if d.Height == 0 {
		d.Height = desktop.Height
	}
	if d.DeviceScaleFactor == 0 {
		d.DeviceScaleFactor = 1
	}
	return d, nil
}
