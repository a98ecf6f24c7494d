package sqlite

import (
	"database/sql"
	"path/filepath"
	"slices"
	"testing"

	"github.com/duet-test/duet"
)

// TestTeamRolesMigration: migration 00018 gives existing teams an owner —
// the creator, or where the creator left, the earliest member — and makes
// everyone else a member; shares with existing teams are bound to their ids
// and shares naming a team that does not exist are dropped (they would go
// to whoever created it first).
func TestTeamRolesMigration(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "duet.db")
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	p, err := provider(raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 17); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO teams (name, created_by, created_at) VALUES ('qa', 'alice', 1), ('ops', 'zed', 1)`,
		`INSERT INTO team_members (team, user_id, added_by, added_at) VALUES
			('qa', 'bob', 'alice', 2), ('qa', 'alice', 'alice', 1),
			('ops', 'dave', 'zed', 3), ('ops', 'carol', 'zed', 2)`, // zed, ops' creator, left
		`INSERT INTO tasks (id, owner, name, created_at, updated_at) VALUES ('task_1', 'alice', 'shop', 1, 1)`,
		`INSERT INTO task_shares (task_id, user_id, created_at) VALUES ('task_1', 'team:qa', 1), ('task_1', 'team:ghost', 1), ('task_1', 'erin', 1)`,
		`INSERT INTO assets (id, owner, kind, name, version, created_at, updated_at) VALUES ('asset_1', 'alice', 'skill', 'login', 1, 1, 1)`,
		`INSERT INTO asset_versions (asset_id, version, description, body, created_at) VALUES ('asset_1', 1, '', 'log in', 1)`,
		`INSERT INTO asset_shares (asset_id, user_id, created_at) VALUES ('asset_1', 'team:ops', 1), ('asset_1', 'team:ghost', 1), ('asset_1', '*', 1)`,
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()
	db, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	for team, want := range map[string]map[string]duet.TeamRole{
		"qa":  {"alice": duet.RoleOwner, "bob": duet.RoleMember},
		"ops": {"carol": duet.RoleOwner, "dave": duet.RoleMember},
	} {
		viewer := "bob"
		if team == "ops" {
			viewer = "dave"
		}
		got, err := db.FindTeam(ctx, viewer, team)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Roles) != len(want) || got.ID == "" {
			t.Errorf("team %s: %+v", team, got)
		}
		for u, r := range want {
			if got.Roles[u] != r {
				t.Errorf("team %s: %s is %q, want %q", team, u, got.Roles[u], r)
			}
		}
	}
	ids, err := db.TeamIDs(ctx, []string{"qa", "ops"})
	if err != nil || len(ids) != 2 || ids["qa"] == ids["ops"] {
		t.Fatalf("team ids: %v %v", ids, err)
	}
	task, err := db.FindTaskByID(ctx, "alice", "task_1")
	if err != nil || !slices.Equal(task.SharedWith, []string{"erin", "team:qa"}) {
		t.Fatalf("the task's shares: %+v %v", task, err)
	}
	var bound string
	if err := db.SQL().QueryRowContext(ctx, `SELECT team_id FROM task_shares WHERE user_id = 'team:qa'`).Scan(&bound); err != nil || bound != ids["qa"] {
		t.Fatalf("the share with qa is bound to %q (%v), want %s", bound, err, ids["qa"])
	}
	asset, err := db.FindAsset(ctx, "alice", duet.AssetSkill, "login", 0)
	if err != nil || !slices.Equal(asset.SharedWith, []string{"*", "team:ops"}) {
		t.Fatalf("the asset's shares: %+v %v", asset, err)
	}
	// A share naming a team carries its id, whoever writes it.
	if _, err := db.SQL().ExecContext(ctx, `INSERT INTO task_shares (task_id, user_id, created_at) VALUES ('task_1', 'team:ops', 1)`); err == nil {
		t.Error("a share with team:ops without the team's id was stored")
	}
	// A team inserted by hand gets an id.
	if _, err := db.SQL().ExecContext(ctx, `INSERT INTO teams (name, created_by, created_at) VALUES ('byhand', 'x', 1)`); err != nil {
		t.Fatal(err)
	}
	if ids, err := db.TeamIDs(ctx, []string{"byhand"}); err != nil || ids["byhand"] == "" {
		t.Fatalf("a team inserted by hand: %v %v", ids, err)
	}
}
