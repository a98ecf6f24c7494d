package storerules

import (
	"context"
	"testing"

	"github.com/duet-test/duet"
)

// TestFindAssetReadsTheRef: a bare name is looked for under every owner,
// owner/name under owner only, and "/name" (no owner) finds nothing
// without a query; the pick gets its shares.
func TestFindAssetReadsTheRef(t *testing.T) {
	var asked []string
	candidates := func(_ context.Context, viewer string, kind duet.AssetKind, owner, name string, version int) ([]*duet.Asset, error) {
		asked = append(asked, owner+"|"+name)
		return []*duet.Asset{{Owner: "bob", Kind: kind, Name: name}}, nil
	}
	var shared []*duet.Asset
	shares := func(_ context.Context, as ...*duet.Asset) error { shared = append(shared, as...); return nil }
	ctx := context.Background()

	for _, tt := range []struct{ ref, asked string }{{"login", "|login"}, {"bob/login", "bob|login"}} {
		asked, shared = nil, nil
		a, err := FindAsset(ctx, "alice", duet.AssetKind("page"), tt.ref, 0, candidates, shares)
		if err != nil || a == nil || len(asked) != 1 || asked[0] != tt.asked || len(shared) != 1 || shared[0] != a {
			t.Fatalf("%s: got %+v %v, asked %q, shares read for %v", tt.ref, a, err, asked, shared)
		}
	}
	asked = nil
	if _, err := FindAsset(ctx, "alice", duet.AssetKind("page"), "/login", 0, candidates, shares); duet.ErrorCode(err) != duet.CodeNotFound || len(asked) != 0 {
		t.Fatalf("/login: got %v after asking %q, want NOT_FOUND without a query", err, asked)
	}
	if _, err := FindAsset(ctx, "", duet.AssetKind("page"), "login", 0, candidates, shares); duet.ErrorCode(err) != duet.CodeInvalidArgument {
		t.Fatalf("no viewer: got %v, want INVALID_ARGUMENT", err)
	}
}
