package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// mcpStmts holds statements on the path of every MCP call, prepared once:
// parsing the SQL would otherwise cost more than running it.
type mcpStmts struct {
	once     sync.Once
	toolStmt *sql.Stmt
	err      error
}

const findServerToolSQL = `SELECT %s, t.name, t.title, t.description, t.input_schema, t.output_schema, t.annotations
	FROM mcp_servers s LEFT JOIN mcp_tools t ON t.server_id = s.id AND t.name = ?
	WHERE s.owner = ? AND s.server_key = ?`

func (d *DB) serverToolStmt(ctx context.Context) (*sql.Stmt, error) {
	d.mcp.once.Do(func() {
		d.mcp.toolStmt, d.mcp.err = d.db.PrepareContext(context.WithoutCancel(ctx), fmt.Sprintf(findServerToolSQL, storerules.PrefixColumns("s.", storerules.MCPServerColumns)))
	})
	return d.mcp.toolStmt, d.mcp.err
}

// mcpConflict names what is already taken when an insert or update hits one
// of the unique constraints.
func mcpConflict(err error, s *duet.MCPServer) error {
	if duet.ErrorCode(err) != duet.CodeConflict {
		return err
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "mcp_servers.name"):
		return duet.WrapError(duet.CodeConflict, err, "you already have an MCP server named %q; remove it first or pick another name", s.Name)
	case strings.Contains(msg, "mcp_servers.server_key"):
		return duet.WrapError(duet.CodeConflict, err, "you already registered this address (serverKey %s) under another name", s.ServerKey)
	}
	return err
}

// CreateMCPServer stores a registration and its credential in one
// transaction (storerules.CreateMCPServer). Returns CONFLICT,
// INVALID_ARGUMENT.
func (d *DB) CreateMCPServer(ctx context.Context, s *duet.MCPServer, cred *duet.Credential) error {
	err := d.tx(ctx, func(tx *cachedTx) error {
		return storerules.CreateMCPServer(ctx, storerules.MCPServerRows{E: d.engineOn(tx)}, s, cred, d.now().Truncate(time.Microsecond))
	})
	return mcpConflict(err, s)
}

// ReplaceMCPServer replaces a registration's address and credential and drops
// its archived catalog (storerules.ReplaceMCPServer). Returns NOT_FOUND,
// CONFLICT, INVALID_ARGUMENT.
func (d *DB) ReplaceMCPServer(ctx context.Context, s *duet.MCPServer, cred *duet.Credential) error {
	err := d.tx(ctx, func(tx *cachedTx) error {
		return storerules.ReplaceMCPServer(ctx, storerules.MCPServerRows{E: d.engineOn(tx)}, s, cred, d.now().Truncate(time.Microsecond))
	})
	return mcpConflict(err, s)
}

// FindMCPServerTool returns the owner's registration of serverKey and the
// archived tool, if any, in one query. It is read through the read cache
// (cache.go): migration 00015's triggers on mcp_servers and mcp_tools move
// the counter whenever a registration or an archived catalog changes, by
// whoever writes. The cached value holds no secret (a credential is named by
// its ref; its ciphertext is read when a session opens). Returns NOT_FOUND.
func (d *DB) FindMCPServerTool(ctx context.Context, owner, serverKey, tool string) (*duet.MCPServer, *duet.MCPTool, error) {
	st, err := cached(ctx, d, serverToolKey(owner, serverKey, tool), func() (serverTool, error) {
		s, t, err := d.readMCPServerTool(ctx, owner, serverKey, tool)
		return serverTool{s, t}, err
	}, cloneServerTool)
	if err != nil {
		return nil, nil, err
	}
	if st.server.Owner != owner || st.server.ServerKey != serverKey {
		// Never another user's registration, whatever the cache holds.
		return nil, nil, duet.Errorf(duet.CodeInternal, "the registry lookup of %s for %s returned another registration", serverKey, owner)
	}
	return st.server, st.tool, nil
}

// serverToolKey is the cache key of a registry lookup. The owner and the
// serverKey are length-prefixed so that no two lookups share a key,
// whatever bytes their parts hold.
func serverToolKey(owner, serverKey, tool string) string {
	return "mcptool\x00" + strconv.Itoa(len(owner)) + "\x00" + owner + strconv.Itoa(len(serverKey)) + "\x00" + serverKey + tool
}

// serverTool is a registry lookup as cached.
type serverTool struct {
	server *duet.MCPServer
	tool   *duet.MCPTool // nil when the archived catalog lacks the tool
}

func cloneServerTool(st serverTool) serverTool {
	s := *st.server
	s.HeaderNames = slices.Clone(st.server.HeaderNames)
	if st.server.SyncedAt != nil {
		t := *st.server.SyncedAt
		s.SyncedAt = &t
	}
	out := serverTool{server: &s}
	if st.tool != nil {
		t := *st.tool
		t.InputSchema = slices.Clone(t.InputSchema)
		t.OutputSchema = slices.Clone(t.OutputSchema)
		t.Annotations = slices.Clone(t.Annotations)
		out.tool = &t
	}
	return out
}

func (d *DB) readMCPServerTool(ctx context.Context, owner, serverKey, tool string) (*duet.MCPServer, *duet.MCPTool, error) {
	var (
		name, title, desc, in, out, ann sql.NullString
	)
	stmt, err := d.serverToolStmt(ctx)
	if err != nil {
		return nil, nil, mapErr(err)
	}
	// A lookup by key, on every invoke(): without the caller's cancellation,
	// which the driver watches with a goroutine per statement (more than
	// the lookup costs; see docs/performance.md).
	s, err := storerules.ScanMCPServer(stmt.QueryRowContext(context.WithoutCancel(ctx), tool, owner, serverKey), &name, &title, &desc, &in, &out, &ann)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, duet.Errorf(duet.CodeNotFound, "%s has not registered MCP server %s", owner, serverKey)
	}
	if err != nil {
		return nil, nil, mapErr(err)
	}
	if !name.Valid {
		return s, nil, nil
	}
	return s, &duet.MCPTool{Name: name.String, Title: title.String, Description: desc.String,
		InputSchema: storerules.RawJSON(in.String), OutputSchema: storerules.RawJSON(out.String), Annotations: storerules.RawJSON(ann.String)}, nil
}

// SaveMCPCatalog replaces the archived catalog of registration id. Returns
// NOT_FOUND.
func (d *DB) SaveMCPCatalog(ctx context.Context, id string, cat *duet.MCPCatalog) error {
	return d.tx(ctx, func(tx *cachedTx) error {
		res, err := tx.ExecContext(ctx, `UPDATE mcp_servers SET transport = ?, protocol_version = ?, server_name = ?, server_version = ?,
			catalog_hash = ?, tool_count = ?, synced_at = ? WHERE id = ?`,
			cat.Transport, cat.ProtocolVersion, cat.ServerName, cat.ServerVersion, cat.Hash, len(cat.Tools), micros(cat.SyncedAt), id)
		if err != nil {
			return mapErr(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return storerules.NotFound("MCP server", id)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM mcp_tools WHERE server_id = ?`, id); err != nil {
			return mapErr(err)
		}
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO mcp_tools (server_id, name, position, title, description, input_schema, output_schema, annotations)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return mapErr(err)
		}
		defer stmt.Close()
		for i, t := range cat.Tools {
			if _, err := stmt.ExecContext(ctx, id, t.Name, i, t.Title, t.Description,
				string(t.InputSchema), string(t.OutputSchema), string(t.Annotations)); err != nil {
				if duet.ErrorCode(mapErr(err)) == duet.CodeConflict {
					return duet.Errorf(duet.CodeInvalidArgument, "the catalog lists tool %q twice", t.Name)
				}
				return mapErr(err)
			}
		}
		return nil
	})
}

// LeaseCredential takes the renewal lease of credential ref for holder and
// returns the credential. Returns NOT_FOUND, CONFLICT.
func (d *DB) LeaseCredential(ctx context.Context, ref, holder string, ttl time.Duration) (*duet.Credential, error) {
	if holder == "" || ttl <= 0 {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "a credential lease needs a holder and a duration")
	}
	now := d.now()
	var c *duet.Credential
	err := d.tx(ctx, func(tx *cachedTx) error {
		res, err := tx.ExecContext(ctx, `UPDATE mcp_credentials SET lease_holder = ?, lease_until = ?
			WHERE ref = ? AND (lease_holder = '' OR lease_holder = ? OR lease_until <= ?)`,
			holder, micros(now.Add(ttl)), ref, holder, micros(now))
		if err != nil {
			return mapErr(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if err := storerules.CredentialMissed(ctx, engineOf(tx), ref); duet.ErrorCode(err) != duet.CodeConflict {
				return err
			}
			return duet.Errorf(duet.CodeConflict, "another process is renewing the token of credential %s", ref)
		}
		c, err = storerules.ScanCredential(tx.QueryRowContext(ctx, `SELECT `+storerules.CredentialColumns+` FROM mcp_credentials WHERE ref = ?`, ref))
		return mapErr(err)
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// ReleaseCredential ends holder's lease of credential ref.
func (d *DB) ReleaseCredential(ctx context.Context, ref, holder string) error {
	_, err := d.q.ExecContext(ctx, `UPDATE mcp_credentials SET lease_holder = '', lease_until = 0 WHERE ref = ? AND lease_holder = ?`, ref, holder)
	return mapErr(err)
}

// AppendInvocations stores invocation records in one transaction, up to
// invocationChunk rows per INSERT statement, as AppendAudit does (a
// statement per record was most of the recorder's CPU). The rows of one
// statement get consecutive ids in order (AUTOINCREMENT, one writer), so
// each record's id follows from the statement's last one.
func (d *DB) AppendInvocations(ctx context.Context, recs []*duet.Invocation) error {
	return appendLog(ctx, d, recs, invocationChunk, invocationInto, func(r *duet.Invocation) []any {
		return []any{micros(r.Time), r.TraceID, r.Executor, r.Source, r.ServerKey, r.Tool, r.Outcome, r.DurationUs, r.ArgBytes, r.ResultBytes}
	}, func(r *duet.Invocation, id int64) { r.ID = id })
}

// invocationChunk is the most rows one INSERT of AppendInvocations
// carries (10 parameters each, well under SQLite's limit of 32766).
const invocationChunk = 64

// invocationInto is the table and columns of the invocation INSERT.
const invocationInto = `mcp_invocations (time, trace_id, executor, source, server_key, tool, outcome, duration_us, arg_bytes, result_bytes)`

// FindInvocations returns invocation records matching f, newest first.
func (d *DB) FindInvocations(ctx context.Context, f duet.InvocationFilter) ([]*duet.Invocation, error) {
	q, args := storerules.InvocationSearch(f, stored)
	return all(ctx, d.q, storerules.ScanInvocation, q, args...)
}
