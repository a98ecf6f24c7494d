package compiler

import (
	"context"
	"os"
	"path/filepath"

	"github.com/duet-test/duet"
)

// exampleFlowAssets finds the flow assets the examples use in
// examples/assets (the example's header adds them: duet asset add flow).
func exampleFlowAssets(_ context.Context, ref string, _ int) (*duet.Asset, error) {
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "assets", filepath.Base(ref)+".yaml"))
	if err != nil {
		return nil, duet.Errorf(duet.CodeNotFound, "no flow asset %q", ref)
	}
	return &duet.Asset{Kind: duet.AssetKind("flow"), Name: ref, Owner: "alice", Version: 1, Body: string(b)}, nil
}
