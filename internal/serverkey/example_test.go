package serverkey_test

import (
	"fmt"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/serverkey"
)

func ExampleKey() {
	a, _ := serverkey.Key("https://MCP.Example.com:443/api/./v1/?b=2&a=1#top")
	b, _ := serverkey.Key("https://mcp.example.com/api/v1?a=1&b=2")
	fmt.Println(a == b)

	_, err := serverkey.Key("https://mcp.example.com/api?api_key=...")
	fmt.Println(duet.ErrorCode(err))
	// Output:
	// true
	// URL_REFUSED
}

func ExampleNormalize() {
	n, _ := serverkey.Normalize("HTTP://Example.COM:80/a/./b/../c/?z=1&a=2#frag")
	fmt.Println(n)
	// Output: http://example.com/a/c?a=2&z=1
}
