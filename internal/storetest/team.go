package storetest

import (
	"slices"
	"strings"
	"testing"

	"github.com/duet-test/duet"
)

// testTeams: a task and an asset shared with a team are visible to its
// members as they are at each read; a member added sees them at once, a
// member removed stops seeing them at once; a task handed to a user or a
// team changes hands, is recorded, and its old owner keeps only what sharing
// gives; a team's dependency list holds addresses and tools, never a
// credential.
func testTeams(t *testing.T, s duet.Store) {
	c := ctx(t)
	task := mustApply(t, s, "alice", suite("shop", "a")).Task

	if _, err := s.CreateTeam(c, "alice", "Bad Name"); duet.ErrorCode(err) != duet.CodeInvalidArgument {
		t.Fatalf("bad team name: got %v", err)
	}
	team, err := s.CreateTeam(c, "alice", "qa")
	if err != nil || !slices.Equal(team.Members, []string{"alice"}) || team.Role("alice") != duet.RoleOwner || team.ID == "" {
		t.Fatalf("CreateTeam: %+v %v", team, err)
	}
	if found, err := s.FindTeam(c, "alice", "qa"); err != nil || found.ID != team.ID || found.Role("alice") != duet.RoleOwner {
		t.Fatalf("FindTeam: %+v %v", found, err)
	}
	_, err = s.CreateTeam(c, "bob", "qa")
	wantCode(t, err, duet.CodeConflict)
	// Only members manage a team; to others it does not exist.
	wantCode(t, s.AddTeamMember(c, "mallory", "qa", "mallory"), duet.CodeNotFound)
	_, err = s.FindTeam(c, "bob", "qa")
	wantCode(t, err, duet.CodeNotFound)

	visible := func(user string) bool {
		_, err := s.FindTaskByID(c, user, task.ID)
		if err != nil && duet.ErrorCode(err) != duet.CodeNotFound {
			t.Fatal(err)
		}
		return err == nil
	}
	if err := s.ShareTask(c, "alice", task.ID, duet.TeamPrincipal("qa")); err != nil {
		t.Fatal(err)
	}
	if visible("bob") {
		t.Fatal("bob sees the task before he joins the team")
	}
	if err := s.AddTeamMember(c, "alice", "qa", "bob"); err != nil {
		t.Fatal(err)
	}
	if !visible("bob") {
		t.Fatal("bob, a member now, does not see the task shared with his team")
	}
	tasks, _, total, err := s.FindTasks(c, duet.TaskFilter{Viewer: "bob"})
	if err != nil || total != 1 || tasks[0].ID != task.ID {
		t.Fatalf("bob's tasks: %v %d %v", tasks, total, err)
	}
	if teams, err := s.FindTeams(c, "bob"); err != nil || len(teams) != 1 || !slices.Equal(teams[0].Members, []string{"alice", "bob"}) {
		t.Fatalf("FindTeams: %+v %v", teams, err)
	}
	if err := s.RemoveTeamMember(c, "alice", "qa", "bob"); err != nil {
		t.Fatal(err)
	}
	if visible("bob") {
		t.Fatal("bob still sees the task after he left the team")
	}
	wantCode(t, s.RemoveTeamMember(c, "alice", "qa", "alice"), duet.CodeConflict) // the last owner stays

	// The dependency list: an address without credentials, and tools.
	srv := &duet.TeamServer{Team: "qa", Name: "orders", URL: "HTTP://Orders.Example:80/mcp", Description: "the order service",
		Tools: []*duet.MCPToolAsset{{Name: "query_order", Description: "read an order"}}, AddedBy: "alice"}
	if err := s.SaveTeamServer(c, srv); err != nil {
		t.Fatal(err)
	}
	if srv.URL != "http://orders.example/mcp" || srv.ServerKey == "" {
		t.Errorf("saved server: got url %s key %s", srv.URL, srv.ServerKey)
	}
	leaky := &duet.TeamServer{Team: "qa", Name: "leaky", URL: "https://x.example/mcp?token=s3cr3t", AddedBy: "alice"}
	if err := s.SaveTeamServer(c, leaky); err == nil {
		t.Error("a URL with a token in it was accepted")
	}
	if err := s.SaveTeamServer(c, &duet.TeamServer{Team: "qa", Name: "x", URL: "https://x.example/", AddedBy: "bob"}); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("a non-member adds a server: got %v", err)
	}
	list, err := s.FindTeamServers(c, "alice", "qa")
	if err != nil || len(list) != 1 || list[0].ServerKey != srv.ServerKey || len(list[0].Tools) != 1 || list[0].Tools[0].Name != "query_order" {
		t.Fatalf("FindTeamServers: %+v %v", list, err)
	}
	_, err = s.FindTeamServers(c, "bob", "qa")
	wantCode(t, err, duet.CodeNotFound)

	// The list is changed only by maintainers and owners: bob, a member,
	// cannot point alice's "orders" at his own address (where a teammate
	// registering it would send credentials) nor remove it to list it
	// anew; made a maintainer, he may.
	if err := s.AddTeamMember(c, "alice", "qa", "bob"); err != nil {
		t.Fatal(err)
	}
	evil := &duet.TeamServer{Team: "qa", Name: "orders", URL: "https://evil.example/mcp", AddedBy: "bob"}
	if err := s.SaveTeamServer(c, evil); duet.ErrorCode(err) != duet.CodePermissionDenied || !strings.Contains(duet.ErrorMessage(err), "maintainer") {
		t.Errorf("bob, a member, replaces alice's entry: got %v, want PERMISSION_DENIED naming the maintainer role", err)
	}
	wantCode(t, s.DeleteTeamServer(c, "bob", "qa", "orders"), duet.CodePermissionDenied)
	if list, _ := s.FindTeamServers(c, "bob", "qa"); len(list) != 1 || list[0].URL != srv.URL || list[0].AddedBy != "alice" {
		t.Fatalf("after bob's attempts: %+v", list)
	}
	again := *srv
	again.Description = "orders, read only"
	if err := s.SaveTeamServer(c, &again); err != nil {
		t.Fatalf("alice updates her own entry: %v", err)
	}
	if err := s.SetTeamRole(c, "alice", "qa", "bob", duet.RoleMaintainer); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveTeamServer(c, &duet.TeamServer{Team: "qa", Name: "bobs", URL: "https://bob.example/mcp", AddedBy: "bob"}); err != nil {
		t.Fatalf("bob, a maintainer, lists a server: %v", err)
	}
	if err := s.DeleteTeamServer(c, "alice", "qa", "bobs"); err != nil {
		t.Fatalf("alice, an owner, removes bob's entry: %v", err)
	}
	wantCode(t, s.DeleteTeamServer(c, "alice", "qa", "bobs"), duet.CodeNotFound)
	if err := s.RemoveTeamMember(c, "alice", "qa", "bob"); err != nil {
		t.Fatal(err)
	}

	// Handing the task to carol: alice keeps nothing but what sharing
	// gives her (her team's share), and the transfer is recorded.
	if _, err := s.TransferTask(c, "bob", task.ID, "carol"); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Fatalf("a non-owner transfers: got %v", err)
	}
	tr, err := s.TransferTask(c, "alice", task.ID, "carol")
	if err != nil || tr.From != "alice" || tr.To != "carol" || tr.By != "alice" {
		t.Fatalf("TransferTask: %+v %v", tr, err)
	}
	got, err := s.FindTaskByID(c, "carol", task.ID)
	if err != nil || got.Owner != "carol" {
		t.Fatalf("carol's task: %+v %v", got, err)
	}
	if !visible("alice") {
		t.Fatal("alice lost the task although it is shared with her team")
	}
	wantCode(t, s.ShareTask(c, "alice", task.ID, "dave"), duet.CodeNotFound) // no longer the owner
	if err := s.UnshareTask(c, "carol", task.ID, duet.TeamPrincipal("qa")); err != nil {
		t.Fatal(err)
	}
	if visible("alice") {
		t.Fatal("alice still sees the task with no share left")
	}

	// To a team: every member acts as the owner.
	if _, err := s.TransferTask(c, "carol", task.ID, "team:nope"); duet.ErrorCode(err) != duet.CodeInvalidArgument {
		t.Fatalf("transfer to an unknown team: got %v", err)
	}
	if _, err := s.TransferTask(c, "carol", task.ID, duet.TeamPrincipal("qa")); err != nil {
		t.Fatal(err)
	}
	if !visible("alice") || visible("carol") {
		t.Fatal("after the transfer to team qa: want alice (member) to see it and carol not")
	}
	if err := s.ShareTask(c, "alice", task.ID, "erin"); err != nil {
		t.Fatalf("a member of the owning team shares the task: %v", err)
	}
	hist, err := s.FindTaskTransfers(c, "alice", task.ID)
	if err != nil || len(hist) != 2 || hist[0].To != "carol" || hist[1].From != "carol" || hist[1].To != "team:qa" {
		t.Fatalf("transfers: %+v %v", hist, err)
	}
}

// testTeamAssets: an asset shared with a team is visible to its members.
func testTeamAssets(t *testing.T, s AssetStore) {
	c := ctx(t)
	if _, err := s.CreateTeam(c, "alice", "qa"); err != nil {
		t.Fatal(err)
	}
	a := &duet.Asset{Kind: duet.AssetSkill, Name: "login", Owner: "alice", Body: "log in first", SharedWith: []string{duet.TeamPrincipal("qa")}}
	if _, err := s.SaveAsset(c, a); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FindAsset(c, "bob", duet.AssetSkill, "alice/login", 0); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Fatalf("bob before joining: got %v", err)
	}
	if err := s.AddTeamMember(c, "alice", "qa", "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FindAsset(c, "bob", duet.AssetSkill, "alice/login", 0); err != nil {
		t.Fatalf("bob, a member: %v", err)
	}
}
