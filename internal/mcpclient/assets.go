package mcpclient

import (
	"context"
	"fmt"

	"github.com/duet-test/duet"
)

var _ duet.MCPAssetLister = (*Client)(nil)

// MCPAssets returns user's registered servers with their archived tools, by
// name, as the agent and the asset center see them: names, serverKeys,
// descriptions and schemas, never a URL, a header name or a credential.
func (c *Client) MCPAssets(ctx context.Context, user string) ([]*duet.MCPServerAsset, error) {
	servers, err := c.store.FindMCPServers(ctx, user)
	if err != nil {
		return nil, err
	}
	out := make([]*duet.MCPServerAsset, 0, len(servers))
	for _, s := range servers {
		tools, err := c.store.FindMCPTools(ctx, s.ID)
		if err != nil {
			return nil, err
		}
		a := &duet.MCPServerAsset{ServerKey: s.ServerKey, Name: s.Name, Tools: make([]*duet.MCPToolAsset, 0, len(tools))}
		switch {
		case s.SyncedAt == nil:
			a.Description = "catalog not synced yet"
		case s.ServerName != "":
			a.Description = fmt.Sprintf("%s %s, %d tools", s.ServerName, s.ServerVersion, s.ToolCount)
		}
		for _, t := range tools {
			a.Tools = append(a.Tools, &duet.MCPToolAsset{Name: t.Name, Title: t.Title, Description: t.Description,
				InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations})
		}
		out = append(out, a)
	}
	return out, nil
}
