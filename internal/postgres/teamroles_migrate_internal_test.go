package postgres

import (
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/postgres/pgtest"
)

// TestTeamRolesMigration: migration 00018 gives existing teams an owner —
// the creator, or where the creator left, the earliest member — and makes
// everyone else a member; shares with existing teams are bound to their ids
// and shares naming a team that does not exist are dropped (they would go
// to whoever created it first). The same as SQLite's test.
func TestTeamRolesMigration(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.URL(t)
	cfg, err := ParseURL(url, &Options{})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	raw := stdlib.OpenDBFromPool(pool)
	p, err := provider(raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 17); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO teams (name, created_by, created_at) VALUES ('qa', 'alice', now()), ('ops', 'zed', now())`,
		`INSERT INTO team_members (team, user_id, added_by, added_at) VALUES
			('qa', 'bob', 'alice', now()), ('qa', 'alice', 'alice', now() - interval '1 hour'),
			('ops', 'dave', 'zed', now()), ('ops', 'carol', 'zed', now() - interval '1 hour')`, // zed, ops' creator, left
		`INSERT INTO tasks (id, owner, name, created_at, updated_at) VALUES ('task_1', 'alice', 'shop', now(), now())`,
		`INSERT INTO task_shares (task_id, user_id, created_at) VALUES ('task_1', 'team:qa', now()), ('task_1', 'team:ghost', now()), ('task_1', 'erin', now())`,
		`INSERT INTO assets (id, owner, kind, name, version, created_at, updated_at) VALUES ('asset_1', 'alice', 'skill', 'login', 1, now(), now())`,
		`INSERT INTO asset_versions (asset_id, version, description, body, created_at) VALUES ('asset_1', 1, '', 'log in', now())`,
		`INSERT INTO asset_shares (asset_id, user_id, created_at) VALUES ('asset_1', 'team:ops', now()), ('asset_1', 'team:ghost', now()), ('asset_1', '*', now())`,
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()
	pool.Close()
	db, err := Open(ctx, url, nil)
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
	if err := db.pool.QueryRow(ctx, `SELECT team_id FROM task_shares WHERE user_id = 'team:qa'`).Scan(&bound); err != nil || bound != ids["qa"] {
		t.Fatalf("the share with qa is bound to %q (%v), want %s", bound, err, ids["qa"])
	}
	asset, err := db.FindAsset(ctx, "alice", duet.AssetSkill, "login", 0)
	if err != nil || !slices.Equal(asset.SharedWith, []string{"*", "team:ops"}) {
		t.Fatalf("the asset's shares: %+v %v", asset, err)
	}
	// A share naming a team carries its id, whoever writes it.
	if _, err := db.pool.Exec(ctx, `INSERT INTO task_shares (task_id, user_id, created_at) VALUES ('task_1', 'team:ops', now())`); err == nil {
		t.Error("a share with team:ops without the team's id was stored")
	}
	// A team inserted by hand gets an id.
	if _, err := db.pool.Exec(ctx, `INSERT INTO teams (name, created_by, created_at) VALUES ('byhand', 'x', now())`); err != nil {
		t.Fatal(err)
	}
	if ids, err := db.TeamIDs(ctx, []string{"byhand"}); err != nil || ids["byhand"] == "" {
		t.Fatalf("a team inserted by hand: %v %v", ids, err)
	}
}
