package browser

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/duet-test/duet"
)

func TestDeviceByName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		want     Device
		wantUA   string // a part of the user agent
		wantCode duet.Code
	}{
		{"", Device{Name: "desktop", Width: 1280, Height: 800, DeviceScaleFactor: 1}, "", ""},
		{"desktop", Device{Name: "desktop", Width: 1280, Height: 800, DeviceScaleFactor: 1}, "", ""},
		{"iphone-15", Device{Name: "iphone-15", Width: 393, Height: 852, DeviceScaleFactor: 3, Mobile: true, Touch: true}, "iPhone", ""},
		{"pixel-7", Device{Name: "pixel-7", Width: 412, Height: 915, DeviceScaleFactor: 2.625, Mobile: true, Touch: true}, "Android", ""},
		{"ipad", Device{Name: "ipad", Width: 820, Height: 1180, DeviceScaleFactor: 2, Mobile: true, Touch: true}, "iPad", ""},
		{"nokia-3310", Device{}, "", duet.CodeInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := DeviceByName(tt.name)
			if tt.wantCode != "" {
				wantCode(t, err, tt.wantCode, tt.name, "desktop, ipad, iphone-15, pixel-7")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got.UserAgent, tt.wantUA) {
				t.Errorf("got user agent %q, want one with %q", got.UserAgent, tt.wantUA)
			}
			got.UserAgent = ""
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DeviceByName(%q) (-want +got):\n%s", tt.name, diff)
			}
		})
	}
}

func TestDevicesIsACopy(t *testing.T) {
	t.Parallel()
	m := Devices()
	delete(m, "desktop")
	if _, err := DeviceByName("desktop"); err != nil {
		t.Errorf("changing the map of Devices changed the presets: %v", err)
	}
	if diff := cmp.Diff([]string{"desktop", "ipad", "iphone-15", "pixel-7"}, DeviceNames()); diff != "" {
		t.Errorf("DeviceNames() (-want +got):\n%s", diff)
	}
}

func TestDeviceNormalize(t *testing.T) {
	t.Parallel()
	desktop, _ := DeviceByName("desktop")
	tests := []struct {
		name     string
		in       Device
		want     Device
		wantCode duet.Code
	}{
		{"zero is desktop", Device{}, desktop, ""},
		{"zero fields filled", Device{Name: "narrow", Width: 500}, Device{Name: "narrow", Width: 500, Height: 800, DeviceScaleFactor: 1}, ""},
		{"negative", Device{Name: "bad", Width: -1}, Device{}, duet.CodeInvalidArgument},
		{"too large", Device{Name: "huge", Width: 20000, Height: 10}, Device{}, duet.CodeInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.in.normalize()
			if tt.wantCode != "" {
				wantCode(t, err, tt.wantCode, tt.in.Name)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("normalize (-want +got):\n%s", diff)
			}
		})
	}
}
