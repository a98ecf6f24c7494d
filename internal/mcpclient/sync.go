package mcpclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/calldepth"
)

// maxPages bounds a tools/list walk; a server that keeps returning cursors
// beyond it is broken.
const maxPages = 10000

// Sync connects to the owner's registration ref (name or serverKey) with the
// owner's credentials, lists every page of its tools and archives them with a
// content hash and the sync time, replacing the previous archive. It returns
// the registration as updated. Returns NOT_FOUND and the codes of a failed
// connection: MCP_CALL_TIMEOUT, MCP_AUTH_FAILED, MCP_UNREACHABLE,
// MCP_PROTOCOL_MISMATCH, URL_REFUSED, CALL_DEPTH_EXCEEDED.
func (c *Client) Sync(ctx context.Context, owner, ref string) (*duet.MCPServer, error) {
	return c.syncRef(ctx, nil, owner, ref)
}

// syncRef is Sync; its session may ask a person through a (nil: nobody)
// when the server wants a new authorization.
func (c *Client) syncRef(ctx context.Context, a *Authorizer, owner, ref string) (*duet.MCPServer, error) {
	reg, err := c.store.FindMCPServer(ctx, owner, ref)
	if err != nil {
		return nil, err
	}
	if _, err := calldepth.Next(ctx, c.opts.MaxCallDepth); err != nil {
		return nil, err
	}
	return c.sync(ctx, a, reg)
}

// sync archives reg's catalog, retrying once on a new connection when the
// first attempt failed in a way a retry may cure (tools/list is safe to
// repeat). Its sessions may ask a person through a (nil: nobody).
func (c *Client) sync(ctx context.Context, a *Authorizer, reg *duet.MCPServer) (*duet.MCPServer, error) {
	cat, err := c.fetchCatalog(ctx, a, reg)
	if err != nil && retryable(err) && ctx.Err() == nil {
		c.log.DebugContext(ctx, "retrying catalog sync", "server", reg.ServerKey, "owner", reg.Owner, "code", duet.ErrorCode(err))
		cat, err = c.fetchCatalog(ctx, a, reg)
	}
	if err != nil {
		return nil, err
	}
	var before []*duet.MCPTool
	if c.opts.CatalogChanged != nil && reg.SyncedAt != nil && reg.CatalogHash != cat.Hash {
		if before, err = c.store.FindMCPTools(ctx, reg.ID); err != nil {
			return nil, err
		}
	}
	if err := c.store.SaveMCPCatalog(ctx, reg.ID, cat); err != nil {
		return nil, err
	}
	if before != nil {
		c.opts.CatalogChanged(ctx, reg, before, cat.Tools)
	}
	out := *reg
	out.Transport, out.ProtocolVersion, out.ServerName, out.ServerVersion = cat.Transport, cat.ProtocolVersion, cat.ServerName, cat.ServerVersion
	out.CatalogHash, out.ToolCount, out.SyncedAt = cat.Hash, len(cat.Tools), &cat.SyncedAt
	return &out, nil
}

// retryable reports whether a failed sync is worth one more attempt.
func retryable(err error) bool {
	switch duet.ErrorCode(err) {
	case duet.CodeMCPUnreachable, duet.CodeUnavailable:
		return true
	}
	return false
}

// fetchCatalog opens a fresh session (not the cached one, so that no list
// cache answers) and walks tools/list; the session may ask a person
// through a (nil: nobody).
func (c *Client) fetchCatalog(ctx context.Context, a *Authorizer, reg *duet.MCPServer) (*duet.MCPCatalog, error) {
	cctx, cancel := context.WithTimeoutCause(ctx, c.opts.CallTimeout, errCallTimeout)
	s, err := c.connect(cctx, reg, a)
	cancel()
	if err != nil {
		return nil, err
	}
	defer s.cs.Close()
	cat := &duet.MCPCatalog{Transport: s.transport, SyncedAt: time.Now().UTC().Truncate(time.Microsecond)}
	if ir := s.cs.InitializeResult(); ir != nil {
		cat.ProtocolVersion = ir.ProtocolVersion
		if ir.ServerInfo != nil {
			cat.ServerName, cat.ServerVersion = sanitize(ir.ServerInfo.Name, 200), sanitize(ir.ServerInfo.Version, 100)
		}
	}
	seenCursor := map[string]bool{}
	seenTool := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, duet.Errorf(duet.CodeMCPProtocolMismatch, "MCP server %s returned more than %d pages of tools", reg.Name, maxPages)
		}
		pctx, cancel := context.WithTimeoutCause(ctx, c.opts.CallTimeout, errCallTimeout)
		obs := &observer{capture: true}
		res, err := s.cs.ListTools(withObserver(pctx, obs), &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			sc := c.scrubber(s, obs)
			err = sc.err(c.callError(pctx, reg, "tools/list", err, obs, sc))
			cancel()
			return nil, err
		}
		raw := rawTools(obs)
		cancel()
		for _, t := range res.Tools {
			if seenTool[t.Name] {
				return nil, duet.Errorf(duet.CodeMCPProtocolMismatch, "MCP server %s lists tool %q twice", reg.Name, sanitize(t.Name, 100))
			}
			seenTool[t.Name] = true
			cat.Tools = append(cat.Tools, archiveTool(t, raw[t.Name]))
		}
		if res.NextCursor == "" {
			break
		}
		if seenCursor[res.NextCursor] {
			return nil, duet.Errorf(duet.CodeMCPProtocolMismatch, "MCP server %s repeated a tools/list cursor; its pagination loops", reg.Name)
		}
		seenCursor[res.NextCursor] = true
		cursor = res.NextCursor
	}
	sort.Slice(cat.Tools, func(i, j int) bool { return cat.Tools[i].Name < cat.Tools[j].Name })
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, t := range cat.Tools {
		_ = enc.Encode(t)
	}
	cat.Hash = hex.EncodeToString(h.Sum(nil))
	return cat, nil
}

// rawTool is one tool of a tools/list result as the server sent it.
type rawTool struct {
	Name         string          `json:"name"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  json.RawMessage `json:"annotations"`
}

// rawTools returns the tools of the captured tools/list response by name,
// or nil when none was captured.
func rawTools(obs *observer) map[string]rawTool {
	result := capturedResult(obs)
	if result == nil {
		return nil
	}
	var list struct {
		Tools []rawTool `json:"tools"`
	}
	if sdkUnmarshal(result, &list) != nil {
		return nil
	}
	out := make(map[string]rawTool, len(list.Tools))
	for _, t := range list.Tools {
		out[t.Name] = t
	}
	return out
}

// archiveTool keeps the schemas and annotations as the server sent them when
// they were captured, and re-encodes the SDK's view otherwise.
func archiveTool(t *mcp.Tool, raw rawTool) *duet.MCPTool {
	out := &duet.MCPTool{Name: t.Name, Title: t.Title, Description: t.Description}
	if out.Title == "" && t.Annotations != nil {
		out.Title = t.Annotations.Title
	}
	out.InputSchema = compactOr(raw.InputSchema, t.InputSchema)
	out.OutputSchema = compactOr(raw.OutputSchema, t.OutputSchema)
	if t.Annotations != nil {
		out.Annotations = compactOr(raw.Annotations, t.Annotations)
	}
	return out
}

func compactOr(raw json.RawMessage, v any) json.RawMessage {
	if len(raw) > 0 && string(raw) != "null" {
		var b []byte
		if c, err := compact(raw); err == nil {
			b = c
		}
		if b != nil {
			return b
		}
	}
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return nil
	}
	return b
}

// scheduleResync re-syncs the catalog of (owner, serverKey) shortly after
// the server said its tool list changed; notifications arriving together
// cause one sync.
func (c *Client) scheduleResync(k sessionKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if c.resync[k] != nil {
		return // a sync is pending; it will see this change too
	}
	c.bg.Add(1)
	c.resync[k] = time.AfterFunc(200*time.Millisecond, func() {
		defer c.bg.Done()
		c.mu.Lock()
		delete(c.resync, k)
		closed := c.closed
		c.mu.Unlock()
		if closed {
			return
		}
		ctx, cancel := context.WithTimeout(c.ctx, 4*c.opts.CallTimeout)
		defer cancel()
		reg, err := c.store.FindMCPServer(ctx, k.owner, k.serverKey)
		if err != nil {
			return
		}
		if _, err := c.sync(ctx, nil, reg); err != nil {
			c.log.WarnContext(ctx, "re-syncing an MCP catalog after tools/list_changed", "server", k.serverKey, "owner", k.owner,
				"code", duet.ErrorCode(err), "err", duet.ErrorMessage(err))
		}
	})
}
