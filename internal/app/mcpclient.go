package app

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/config"
	"github.com/duet-test/duet/internal/contract"
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
	a.loadKeyring = a.keyringLoader(getenv)
	// Duet's own addresses and public name are refused, at registration and
	// at every connection (a registered name may come to resolve to them):
	// Duet is never an MCP server of itself.
	a.MCPClient = mcpclient.New(mcpclient.Options{
		Store:        a.Store,
		Keyring:      a.loadKeyring,
		Policy:       NetPolicy(a.Config, a.self),
		CallTimeout:  a.Config.MCPCallTimeout,
		MaxCallDepth: a.Config.MaxCallDepth,
		Version:      Version,
		Logger:       a.Logger,
		// A span per request, and the W3C traceparent header to the
		// servers inside the trace domain (DUET_TRACE_DOMAIN) only.
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper { return a.Telemetry.Transport(rt, a.Config.InTraceDomain) },
		TraceDomain:   a.Config.InTraceDomain,
		// Another team's tool changed: flag the cases it breaks.
		CatalogChanged: func(ctx context.Context, reg *duet.MCPServer, old, new []*duet.MCPTool) {
			if reg.SyncedAt != nil {
				if err := a.Store.SaveCatalogHistory(ctx, reg.ID, &duet.ArchivedCatalog{SyncedAt: *reg.SyncedAt, Hash: reg.CatalogHash, Tools: old}); err != nil {
					a.Logger.WarnContext(ctx, "keeping the replaced catalog", "server", reg.ServerKey, "err", err)
				}
			}
			alerts, err := contract.New(a.Store, a.Logger).CatalogChanged(ctx, reg.ServerKey, old, new)
			if err != nil {
				a.Logger.WarnContext(ctx, "checking the cases of a changed catalog", "server", reg.ServerKey, "err", err)
			}
			a.notifyAlerts(ctx, alerts)
		},
	})
	a.Agent.Invoker, a.Agent.Servers = a.Telemetry.Invoker(a.MCPClient), a.MCPClient
}

// keyringLoader loads the vault keyring from DUET_MASTER_KEY,
// DUET_MASTER_KEY_FILE or DUET_HOME/master.key, logging its warnings.
func (a *App) keyringLoader(getenv func(string) string) func() (*vault.Keyring, error) {
	return func() (*vault.Keyring, error) {
		if err := a.sharedKeyConfigured(getenv); err != nil {
			return nil, err
		}
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

// sharedKeyConfigured refuses, on a database several instances share, to
// generate a master key into this instance's DUET_HOME: each instance would
// make its own and none could open the others' credentials. There the key
// comes from DUET_MASTER_KEY or DUET_MASTER_KEY_FILE (or a key file copied
// into every DUET_HOME). Returns INVALID_ARGUMENT.
func (a *App) sharedKeyConfigured(getenv func(string) string) error {
	if a.Config.Engine() != config.EnginePostgres || getenv(vault.EnvMasterKey) != "" || getenv(vault.EnvMasterKeyFile) != "" {
		return nil
	}
	if _, err := os.Stat(filepath.Join(a.Config.Home, vault.KeyFileName)); err == nil {
		return nil
	}
	return duet.Errorf(duet.CodeInvalidArgument, "on a PostgreSQL database every instance must use the same master key for MCP credentials: set %s or %s to it on every instance (docs/deployment.md)",
		vault.EnvMasterKey, vault.EnvMasterKeyFile)
}

// CheckMasterKey refuses to start an instance whose master key cannot open
// the credentials already stored: on a shared database that means its key
// differs from the other instances' (it would fail every mcpCall of every
// user, and seal new credentials the others cannot open). It opens every
// stored credential; with none stored there is nothing to check. The error
// says how many failed and what to set; it never contains key material.
// Returns INVALID_ARGUMENT, UNAVAILABLE.
func (a *App) CheckMasterKey(ctx context.Context) error {
	creds, err := a.Store.FindCredentials(ctx)
	if err != nil || len(creds) == 0 {
		return err
	}
	kr, err := a.MCPKeyring()
	if err != nil {
		return duet.WrapError(duet.CodeInvalidArgument, err, "%d MCP credentials are stored but no master key can be loaded: %s", len(creds), duet.ErrorMessage(err))
	}
	bad := 0
	for _, c := range creds {
		if _, err := kr.Open(c.Ciphertext, vault.AAD(c.Owner, c.ServerKey)); err != nil {
			bad++
		}
	}
	if bad > 0 {
		return duet.Errorf(duet.CodeInvalidArgument, "this instance's master key (id %s) cannot open %d of the %d MCP credentials stored in the database: "+
			"set %s or %s to the key the other instances use (add the old one to %s after a rotation), or remove those registrations with `duet server remove`",
			kr.PrimaryID(), bad, len(creds), vault.EnvMasterKey, vault.EnvMasterKeyFile, vault.EnvMasterKeyPrevious)
	}
	return nil
}

// MCPKeyring loads the master keyring exactly as the MCP client does.
func (a *App) MCPKeyring() (*vault.Keyring, error) { return a.loadKeyring() }

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
			if strings.HasPrefix(ref, "mcp_") {
				return "", duet.Errorf(duet.CodeNotFound, "you (%s) have not registered MCP server %s: a case may call only servers its author registered (register it with `duet server add --as %s --name NAME --url URL`, then write server: NAME)", r.user, ref, r.user)
			}
			return "", duet.Errorf(duet.CodeNotFound, "you (%s) have not registered an MCP server named %q: register it with `duet server add --as %s --name %s --url URL`", r.user, ref, r.user, ref)
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
