//go:build race

package webui_test

const raceEnabled = true
