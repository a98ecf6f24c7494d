package storerules

import (
	"context"
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
