package storerules

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/duet-test/duet"
)

// MCPServerTx is what CreateMCPServer and ReplaceMCPServer ask of one
// engine's transaction.
type MCPServerTx interface {
	// InsertCredential writes c at version 1.
	InsertCredential(ctx context.Context, c *duet.Credential) error
	// InsertMCPServer writes the new registration s.
	InsertMCPServer(ctx context.Context, s *duet.MCPServer) error
	// LockMCPServer reads the credential ref ("" for none) and creation
	// time of the owner's registration id, held until the transaction
	// ends where the engine has row locks; found is false if there is
	// none.
	LockMCPServer(ctx context.Context, owner, id string) (oldRef string, created time.Time, found bool, err error)
	// ResetMCPServer writes s's name, address, credential ref, header
	// names, auth and update time and empties its archived catalog
	// (transport, versions, hash, tool count, sync time).
	ResetMCPServer(ctx context.Context, s *duet.MCPServer) error
	DeleteMCPTools(ctx context.Context, serverID string) error
	DeleteCredential(ctx context.Context, ref string) error
}

// CreateMCPServer checks the registration s (CheckMCPServer) and stores it
// and its credential through tx, as of now (the engine's precision).
func CreateMCPServer(ctx context.Context, tx MCPServerTx, s *duet.MCPServer, cred *duet.Credential, now time.Time) error {
	if err := CheckMCPServer(s, cred); err != nil {
		return err
	}
	if s.ID == "" {
		s.ID = duet.NewID("srv")
	}
	s.CreatedAt, s.UpdatedAt = now, now
	if cred != nil {
		cred.UpdatedAt = now
		if err := tx.InsertCredential(ctx, cred); err != nil {
			return err
		}
	}
	return tx.InsertMCPServer(ctx, s)
}

// ReplaceMCPServer checks the registration s (CheckMCPServer) and replaces
// the address and credential of the owner's registration through tx as of
// now: its archived catalog and tools are dropped, and its old credential
// deleted. Returns NOT_FOUND.
func ReplaceMCPServer(ctx context.Context, tx MCPServerTx, s *duet.MCPServer, cred *duet.Credential, now time.Time) error {
	if err := CheckMCPServer(s, cred); err != nil {
		return err
	}
	oldRef, created, found, err := tx.LockMCPServer(ctx, s.Owner, s.ID)
	if err != nil {
		return err
	}
	if !found {
		return NotFound("MCP server", s.Name)
	}
	if cred != nil {
		cred.UpdatedAt = now
		if err := tx.InsertCredential(ctx, cred); err != nil {
			return err
		}
	}
	s.CreatedAt, s.UpdatedAt = created, now
	s.Transport, s.ProtocolVersion, s.ServerName, s.ServerVersion, s.CatalogHash, s.ToolCount, s.SyncedAt = "", "", "", "", "", 0, nil
	if err := tx.ResetMCPServer(ctx, s); err != nil {
		return err
	}
	if err := tx.DeleteMCPTools(ctx, s.ID); err != nil {
		return err
	}
	if oldRef != "" {
		return tx.DeleteCredential(ctx, oldRef)
	}
	return nil
}

// NullString is how both engines store "" as NULL (a registration without
// a credential).
func NullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// MCPServerRows is MCPServerTx on an Engine whose statements run in the
// transaction.
type MCPServerRows struct{ E Engine }

// InsertCredential writes c at version 1.
func (t MCPServerRows) InsertCredential(ctx context.Context, c *duet.Credential) error {
	_, err := t.E.Exec(ctx, `INSERT INTO mcp_credentials (ref, owner, server_key, ciphertext, updated_at, version) VALUES ($1, $2, $3, $4, $5, 1)`,
		c.Ref, c.Owner, c.ServerKey, c.Ciphertext, t.E.Stored(c.UpdatedAt))
	if err == nil {
		c.Version = 1
	}
	return err
}

// InsertMCPServer writes the new registration s.
func (t MCPServerRows) InsertMCPServer(ctx context.Context, s *duet.MCPServer) error {
	_, err := t.E.Exec(ctx, `INSERT INTO mcp_servers (id, owner, name, url, server_key, credential_ref, header_names, auth, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		s.ID, s.Owner, s.Name, s.URL, s.ServerKey, NullString(s.CredentialRef), HeaderNamesJSON(s.HeaderNames), s.Auth, t.E.Stored(s.CreatedAt), t.E.Stored(s.UpdatedAt))
	return err
}

// ResetMCPServer writes s's name, address, credential ref, header names,
// auth and update time and empties its archived catalog.
func (t MCPServerRows) ResetMCPServer(ctx context.Context, s *duet.MCPServer) error {
	_, err := t.E.Exec(ctx, `UPDATE mcp_servers SET name = $1, url = $2, server_key = $3, credential_ref = $4, header_names = $5, auth = $6,
		transport = '', protocol_version = '', server_name = '', server_version = '', catalog_hash = '', tool_count = 0,
		synced_at = NULL, updated_at = $7 WHERE id = $8`,
		s.Name, s.URL, s.ServerKey, NullString(s.CredentialRef), HeaderNamesJSON(s.HeaderNames), s.Auth, t.E.Stored(s.UpdatedAt), s.ID)
	return err
}

// DeleteMCPTools drops the archived tools of registration serverID.
func (t MCPServerRows) DeleteMCPTools(ctx context.Context, serverID string) error {
	_, err := t.E.Exec(ctx, `DELETE FROM mcp_tools WHERE server_id = $1`, serverID)
	return err
}

// DeleteCredential deletes credential ref.
func (t MCPServerRows) DeleteCredential(ctx context.Context, ref string) error {
	_, err := t.E.Exec(ctx, `DELETE FROM mcp_credentials WHERE ref = $1`, ref)
	return err
}

// MCPServers is the part of duet.MCPServerStore that is the same on every
// engine: the reads of registrations, archived tools and credentials, and
// the compare-and-swap of credentials.
type MCPServers struct{ E Engine }

// FindMCPServer returns the owner's registration named ref, or with
// serverKey ref. Returns NOT_FOUND.
func (s MCPServers) FindMCPServer(ctx context.Context, owner, ref string) (*duet.MCPServer, error) {
	m, err := One(ctx, s.E, scanMCPServer, `SELECT `+MCPServerColumns+` FROM mcp_servers
		WHERE owner = $1 AND (name = $2 OR server_key = $2) ORDER BY name = $2 DESC LIMIT 1`, owner, ref)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, duet.Errorf(duet.CodeNotFound, "you have not registered an MCP server named %q", ref)
	}
	return m, err
}

// scanMCPServer is ScanMCPServer without extra columns.
func scanMCPServer(r Row) (*duet.MCPServer, error) { return ScanMCPServer(r) }

// FindMCPServers lists the owner's registrations by name.
func (s MCPServers) FindMCPServers(ctx context.Context, owner string) ([]*duet.MCPServer, error) {
	return All(ctx, s.E, scanMCPServer, `SELECT `+MCPServerColumns+` FROM mcp_servers WHERE owner = $1 ORDER BY name`, owner)
}

// FindMCPTools returns the archived tools of registration id by name.
func (s MCPServers) FindMCPTools(ctx context.Context, id string) ([]*duet.MCPTool, error) {
	return All(ctx, s.E, ScanMCPTool, `SELECT name, title, description, input_schema, output_schema, annotations
		FROM mcp_tools WHERE server_id = $1 ORDER BY name`, id)
}

// FindCredential returns a credential. Returns NOT_FOUND.
func (s MCPServers) FindCredential(ctx context.Context, ref string) (*duet.Credential, error) {
	c, err := One(ctx, s.E, ScanCredential, `SELECT `+CredentialColumns+` FROM mcp_credentials WHERE ref = $1`, ref)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound("credential", ref)
	}
	return c, err
}

// FindCredentials returns every credential, by ref.
func (s MCPServers) FindCredentials(ctx context.Context) ([]*duet.Credential, error) {
	return All(ctx, s.E, ScanCredential, `SELECT `+CredentialColumns+` FROM mcp_credentials ORDER BY ref`)
}

// UpdateCredentials stores new ciphertexts in one transaction, each only
// if its version is still the one read (compare-and-swap); each then has
// its new version and update time (to the microsecond). Returns NOT_FOUND,
// CONFLICT.
func (s MCPServers) UpdateCredentials(ctx context.Context, creds []*duet.Credential) error {
	now := s.E.Now().Truncate(time.Microsecond)
	err := s.E.Tx(ctx, func(tx Engine) error {
		for _, c := range creds {
			n, err := tx.Exec(ctx, `UPDATE mcp_credentials SET ciphertext = $1, updated_at = $2, version = version + 1
				WHERE ref = $3 AND version = $4`, c.Ciphertext, tx.Stored(now), c.Ref, c.Version)
			if err != nil {
				return err
			}
			if n == 0 {
				return CredentialMissed(ctx, tx, c.Ref)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, c := range creds {
		c.UpdatedAt = now
		c.Version++
	}
	return nil
}

// CredentialMissed says, on e, why a conditional write of credential ref
// changed no row: NOT_FOUND, or CONFLICT when it exists (its version or
// lease differed).
func CredentialMissed(ctx context.Context, e Engine, ref string) error {
	var n int
	if err := e.Read(ctx, []any{&n}, `SELECT count(*) FROM mcp_credentials WHERE ref = $1`, ref); err != nil {
		return err
	}
	if n == 0 {
		return NotFound("credential", ref)
	}
	return duet.Errorf(duet.CodeConflict, "credential %s was changed by another writer", ref)
}

// LockMCPServer reads the credential ref ("" for none) and creation time
// of the owner's registration id, locked until the transaction ends where
// the engine has row locks; found is false if there is none.
func (t MCPServerRows) LockMCPServer(ctx context.Context, owner, id string) (oldRef string, created time.Time, found bool, err error) {
	var ref sql.NullString
	err = t.E.Read(ctx, []any{&ref, TimeOf(&created)}, `SELECT credential_ref, created_at FROM mcp_servers WHERE id = $1 AND owner = $2`+t.E.ForUpdate, id, owner)
	if errors.Is(err, sql.ErrNoRows) {
		return "", time.Time{}, false, nil
	}
	return ref.String, created, err == nil, err
}

// DeleteMCPServer deletes the owner's registration named ref (or with
// serverKey ref), its credential and its archived catalog, in one
// transaction. Returns NOT_FOUND.
func (s MCPServers) DeleteMCPServer(ctx context.Context, owner, ref string) error {
	return s.E.Tx(ctx, func(tx Engine) error {
		var id string
		var cred sql.NullString
		err := tx.Read(ctx, []any{&id, &cred}, `SELECT id, credential_ref FROM mcp_servers WHERE owner = $1 AND (name = $2 OR server_key = $2)
			ORDER BY name = $2 DESC LIMIT 1`+tx.ForUpdate, owner, ref)
		if errors.Is(err, sql.ErrNoRows) {
			return duet.Errorf(duet.CodeNotFound, "you have not registered an MCP server named %q", ref)
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM mcp_servers WHERE id = $1`, id); err != nil {
			return err
		}
		if cred.Valid {
			if _, err := tx.Exec(ctx, `DELETE FROM mcp_credentials WHERE ref = $1`, cred.String); err != nil {
				return err
			}
		}
		return nil
	})
}
