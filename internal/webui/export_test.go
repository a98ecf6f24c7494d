package webui

import "strings"

// GETPatterns are the patterns of the console's pages (the GET routes of
// routes()), for the tests that visit every page.
func GETPatterns() []string {
	var out []string
	for p := range (&Console{}).routes() {
		if strings.HasPrefix(p, "GET ") {
			out = append(out, p)
		}
	}
	return out
}
