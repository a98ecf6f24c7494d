package vault_test

import (
	"fmt"

	"github.com/duet-test/duet/internal/vault"
)

func Example() {
	oldKey, _ := vault.GenerateKey()
	kr, _ := vault.NewKeyring(oldKey)

	// Seal a credential bound to its owner and server.
	aad := vault.AAD("alice", "mcp_orders-example-com_1a2b3c4d")
	ct, _ := kr.Seal([]byte("sk-live-token"), aad)

	// Rotate: a new primary key, the old one kept for decryption.
	newKey, _ := vault.GenerateKey()
	kr, _ = vault.NewKeyring(newKey, oldKey)
	if kr.NeedsRewrap(ct) {
		ct, _ = kr.Rewrap(ct, aad)
	}

	pt, err := kr.Open(ct, aad)
	fmt.Println(string(pt), err, kr.NeedsRewrap(ct))
	_, err = kr.Open(ct, vault.AAD("bob", "mcp_orders-example-com_1a2b3c4d"))
	fmt.Println(err != nil)
	// Output:
	// sk-live-token <nil> false
	// true
}
