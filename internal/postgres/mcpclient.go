package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// mcpConflict names what is already taken when an insert or update hits one
// of the unique constraints.
func mcpConflict(err error, s *duet.MCPServer) error {
	if duet.ErrorCode(err) != duet.CodeConflict {
		return err
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	switch pe.ConstraintName {
	case "mcp_servers_name":
		return duet.WrapError(duet.CodeConflict, err, "you already have an MCP server named %q; remove it first or pick another name", s.Name)
	case "mcp_servers_server_key":
		return duet.WrapError(duet.CodeConflict, err, "you already registered this address (serverKey %s) under another name", s.ServerKey)
	}
	return err
}

// CreateMCPServer stores a registration and its credential in one
// transaction (storerules.CreateMCPServer). Returns CONFLICT,
// INVALID_ARGUMENT.
func (d *DB) CreateMCPServer(ctx context.Context, s *duet.MCPServer, cred *duet.Credential) error {
	err := d.tx(ctx, func(tx pgx.Tx) error {
		return storerules.CreateMCPServer(ctx, storerules.MCPServerRows{E: d.engineOn(tx)}, s, cred, ts(d.now()))
	})
	return mcpConflict(err, s)
}

// ReplaceMCPServer replaces a registration's address and credential and drops
// its archived catalog (storerules.ReplaceMCPServer). Returns NOT_FOUND,
// CONFLICT, INVALID_ARGUMENT.
func (d *DB) ReplaceMCPServer(ctx context.Context, s *duet.MCPServer, cred *duet.Credential) error {
	err := d.tx(ctx, func(tx pgx.Tx) error {
		return storerules.ReplaceMCPServer(ctx, storerules.MCPServerRows{E: d.engineOn(tx)}, s, cred, ts(d.now()))
	})
	return mcpConflict(err, s)
}

// FindMCPServerTool returns the owner's registration of serverKey and the
// archived tool, if any, in one query. Returns NOT_FOUND.
func (d *DB) FindMCPServerTool(ctx context.Context, owner, serverKey, tool string) (*duet.MCPServer, *duet.MCPTool, error) {
	var name, title, desc, in, out, ann *string
	s, err := storerules.ScanMCPServer(d.pool.QueryRow(ctx, `SELECT `+storerules.PrefixColumns("s.", storerules.MCPServerColumns)+`, t.name, t.title, t.description, t.input_schema, t.output_schema, t.annotations
		FROM mcp_servers s LEFT JOIN mcp_tools t ON t.server_id = s.id AND t.name = $1
		WHERE s.owner = $2 AND s.server_key = $3`, tool, owner, serverKey), &name, &title, &desc, &in, &out, &ann)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, duet.Errorf(duet.CodeNotFound, "%s has not registered MCP server %s", owner, serverKey)
	}
	if err != nil {
		return nil, nil, mapErr(err)
	}
	if name == nil {
		return s, nil, nil
	}
	return s, &duet.MCPTool{Name: *name, Title: deref(title), Description: deref(desc),
		InputSchema: storerules.RawJSON(deref(in)), OutputSchema: storerules.RawJSON(deref(out)), Annotations: storerules.RawJSON(deref(ann))}, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// SaveMCPCatalog replaces the archived catalog of registration id. Returns
// NOT_FOUND, INVALID_ARGUMENT (a tool listed twice).
func (d *DB) SaveMCPCatalog(ctx context.Context, id string, cat *duet.MCPCatalog) error {
	n := len(cat.Tools)
	names, titles, descs, ins, outs, anns := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	positions := make([]int32, n)
	seen := make(map[string]bool, n)
	dup := ""
	for i, t := range cat.Tools {
		if seen[t.Name] && dup == "" {
			dup = t.Name
		}
		seen[t.Name] = true
		names[i], titles[i], descs[i] = t.Name, t.Title, t.Description
		ins[i], outs[i], anns[i] = string(t.InputSchema), string(t.OutputSchema), string(t.Annotations)
		positions[i] = int32(i)
	}
	return d.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE mcp_servers SET transport = $1, protocol_version = $2, server_name = $3, server_version = $4,
			catalog_hash = $5, tool_count = $6, synced_at = $7 WHERE id = $8`,
			cat.Transport, cat.ProtocolVersion, cat.ServerName, cat.ServerVersion, cat.Hash, n, ts(cat.SyncedAt), id)
		if err != nil {
			return mapErr(err)
		}
		if tag.RowsAffected() == 0 {
			return storerules.NotFound("MCP server", id)
		}
		if dup != "" {
			return duet.Errorf(duet.CodeInvalidArgument, "the catalog lists tool %q twice", dup)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM mcp_tools WHERE server_id = $1`, id); err != nil {
			return mapErr(err)
		}
		if n == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, `INSERT INTO mcp_tools (server_id, name, position, title, description, input_schema, output_schema, annotations)
			SELECT $1, x.name, x.position, x.title, x.description, x.input_schema, x.output_schema, x.annotations
			FROM unnest($2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
				AS x (name, position, title, description, input_schema, output_schema, annotations)`,
			id, names, positions, titles, descs, ins, outs, anns)
		return mapErr(err)
	})
}

// LeaseCredential takes the renewal lease of credential ref for holder and
// returns the credential. Returns NOT_FOUND, CONFLICT.
func (d *DB) LeaseCredential(ctx context.Context, ref, holder string, ttl time.Duration) (*duet.Credential, error) {
	if holder == "" || ttl <= 0 {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "a credential lease needs a holder and a duration")
	}
	now := ts(d.now())
	c, err := storerules.ScanCredential(d.pool.QueryRow(ctx, `UPDATE mcp_credentials SET lease_holder = $1, lease_until = $2
		WHERE ref = $3 AND (lease_holder = '' OR lease_holder = $1 OR lease_until IS NULL OR lease_until <= $4)
		RETURNING `+storerules.CredentialColumns, holder, now.Add(ttl), ref, now))
	if errors.Is(err, pgx.ErrNoRows) {
		if err := storerules.CredentialMissed(ctx, engineOf(d.pool), ref); duet.ErrorCode(err) != duet.CodeConflict {
			return nil, err
		}
		return nil, duet.Errorf(duet.CodeConflict, "another process is renewing the token of credential %s", ref)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	return c, nil
}

// ReleaseCredential ends holder's lease of credential ref.
func (d *DB) ReleaseCredential(ctx context.Context, ref, holder string) error {
	_, err := d.pool.Exec(ctx, `UPDATE mcp_credentials SET lease_holder = '', lease_until = NULL WHERE ref = $1 AND lease_holder = $2`, ref, holder)
	return mapErr(err)
}

// AppendInvocations stores invocation records in one statement.
func (d *DB) AppendInvocations(ctx context.Context, recs []*duet.Invocation) error {
	return appendLog(ctx, d, invocationLog, recs, func(r *duet.Invocation) logRow {
		return logRow{r.Time, r.TraceID, [5]string{r.Executor, string(r.Source), r.ServerKey, r.Tool, string(r.Outcome)}, r.DurationUs, r.ArgBytes, r.ResultBytes}
	}, func(r *duet.Invocation, id int64) { r.ID = id })
}

// FindInvocations returns invocation records matching f, newest first.
func (d *DB) FindInvocations(ctx context.Context, f duet.InvocationFilter) ([]*duet.Invocation, error) {
	q, args := storerules.InvocationSearch(f, stored)
	return all(ctx, d.pool, storerules.ScanInvocation, q, args...)
}
