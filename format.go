package duet

import "fmt"

// FormatMs renders a duration in milliseconds for people: "85 ms" under a
// second, seconds with decimals digits ("1.24 s" for 2) under a minute,
// then whole minutes and seconds ("2 min 5 s").
func FormatMs(ms int64, decimals int) string {
	switch {
	case ms < 1000:
		return fmt.Sprintf("%d ms", ms)
	case ms < 60_000:
		return fmt.Sprintf("%.*f s", decimals, float64(ms)/1000)
	}
	return fmt.Sprintf("%d min %d s", ms/60_000, ms%60_000/1000)
}
