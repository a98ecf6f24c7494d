package app

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/mcpclient"
	"github.com/duet-test/duet/internal/vault"
)

// initMCPClient builds the MCP client side: the one Invoker every caller
// uses. The master key is loaded on first use (generated into DUET_HOME with
// a warning when no key is configured), so commands that never touch
// credentials never create one.
func (a *App) initMCPClient(opts Options) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	a.MCPClient = mcpclient.New(mcpclient.Options{
		Store:       a.Store,
		Keyring:     a.keyringLoader(getenv),
		Policy:      NetPolicy(a.Config, nil),
		CallTimeout: a.Config.MCPCallTimeout,
		Version:     Version,
		Logger:      a.Logger,
	})
	a.Agent.Invoker, a.Agent.Servers = a.MCPClient, a.MCPClient
}

// keyringLoader loads the vault keyring from DUET_MASTER_KEY,
// DUET_MASTER_KEY_FILE or DUET_HOME/master.key, logging its warnings.
func (a *App) keyringLoader(getenv func(string) string) func() (*vault.Keyring, error) {
	return func() (*vault.Keyring, error) {
		kr, info, err := vault.LoadKeyring(getenv, a.Config.Home)
		if err != nil {
			return nil, err
		}
		for _, w := range info.Warnings {
			a.Logger.Warn(w)
		}
		if info.Generated {
			a.Logger.Warn("generated a new master key for MCP credentials; back it up: without it the stored credentials cannot be decrypted",
				"path", info.Path, "keyId", info.PrimaryID)
		}
		return kr, nil
	}
}

// Keyring loads the master keyring as the MCP client does (for `duet vault`).
func (a *App) Keyring(getenv func(string) string) (*vault.Keyring, vault.LoadInfo, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	return vault.LoadKeyring(getenv, a.Config.Home)
}

// serverResolver resolves mcpCall server names of cases authored by user
// through user's own registrations and archived catalogs.
type serverResolver struct {
	store duet.MCPClientStore
	user  string
}

var _ compiler.ServerResolver = serverResolver{}

// ResolveServer returns the serverKey of the author's registration named ref
// (or with serverKey ref). Returns NOT_FOUND.
func (r serverResolver) ResolveServer(ctx context.Context, ref string) (string, error) {
	s, err := r.store.FindMCPServer(ctx, r.user, ref)
	if err != nil {
		if duet.ErrorCode(err) == duet.CodeNotFound {
			return "", duet.Errorf(duet.CodeNotFound, "you (%s) have not registered an MCP server named %q: register it with `duet server add --name %s --url URL`", r.user, ref, ref)
		}
		return "", err
	}
	return s.ServerKey, nil
}

// Tool checks tool against the author's archived catalog of serverKey.
// known is false when the author has not registered or synced the server.
// Returns MCP_TOOL_NOT_FOUND.
func (r serverResolver) Tool(ctx context.Context, serverKey, tool string) (*compiler.ToolInfo, bool, error) {
	s, t, err := r.store.FindMCPServerTool(ctx, r.user, serverKey, tool)
	if duet.ErrorCode(err) == duet.CodeNotFound {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if s.SyncedAt == nil {
		return nil, false, nil
	}
	if t == nil {
		return nil, true, duet.Errorf(duet.CodeMCPToolNotFound, "MCP server %s has no tool %q in its catalog (%d tools, synced %s; run `duet server sync %s` if it changed)%s",
			s.Name, tool, s.ToolCount, s.SyncedAt.UTC().Format("2006-01-02 15:04"), s.Name, r.suggest(ctx, s, tool))
	}
	return &compiler.ToolInfo{Name: t.Name, InputSchema: t.InputSchema}, true, nil
}

// suggest names archived tools whose names resemble tool.
func (r serverResolver) suggest(ctx context.Context, s *duet.MCPServer, tool string) string {
	tools, err := r.store.FindMCPTools(ctx, s.ID)
	if err != nil {
		return ""
	}
	var near []string
	low := strings.ToLower(tool)
	for _, t := range tools {
		n := strings.ToLower(t.Name)
		if strings.Contains(n, low) || strings.Contains(low, n) || (len(low) > 3 && strings.HasPrefix(n, low[:3])) {
			near = append(near, t.Name)
		}
		if len(near) == 5 {
			break
		}
	}
	if len(near) == 0 {
		return ""
	}
	return fmt.Sprintf("; did you mean %s?", strings.Join(near, ", "))
}
