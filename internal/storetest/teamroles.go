package storetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// testTeamRoles: a team has owners, maintainers and members. The creator is
// the first owner; a member may leave but not remove others; a maintainer
// removes members (not maintainers or owners) and changes the dependency
// list; an owner changes roles; the last owner can neither leave nor be
// demoted nor removed. The review's reproduction: a member removing the
// maintainer who listed an entry and then re-pointing the entry.
func testTeamRoles(t *testing.T, s duet.Store) {
	c := ctx(t)
	if _, err := s.CreateTeam(c, "alice", "qa"); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"bob", "mallory"} {
		if err := s.AddTeamMember(c, "alice", "qa", u); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetTeamRole(c, "alice", "qa", "bob", duet.RoleMaintainer); err != nil {
		t.Fatal(err)
	}
	orders := &duet.TeamServer{Team: "qa", Name: "orders", URL: "https://orders.example/mcp", AddedBy: "bob"}
	if err := s.SaveTeamServer(c, orders); err != nil {
		t.Fatalf("bob, a maintainer, lists orders: %v", err)
	}
	roles := func() map[string]duet.TeamRole {
		t.Helper()
		team, err := s.FindTeam(c, "alice", "qa")
		if err != nil {
			t.Fatal(err)
		}
		return team.Roles
	}
	if got := roles(); got["alice"] != duet.RoleOwner || got["bob"] != duet.RoleMaintainer || got["mallory"] != duet.RoleMember {
		t.Fatalf("roles: %v", got)
	}

	// Mallory, a member, removes the maintainer who listed orders, then
	// points orders at her own endpoint: both refused, and nothing changed.
	err := s.RemoveTeamMember(c, "mallory", "qa", "bob")
	if duet.ErrorCode(err) != duet.CodePermissionDenied || !strings.Contains(duet.ErrorMessage(err), "owner") {
		t.Fatalf("a member removes the maintainer: got %v, want PERMISSION_DENIED naming the role needed", err)
	}
	wantCode(t, s.RemoveTeamMember(c, "mallory", "qa", "alice"), duet.CodePermissionDenied)
	evil := &duet.TeamServer{Team: "qa", Name: "orders", URL: "https://mallory.example/mcp", AddedBy: "mallory"}
	wantCode(t, s.SaveTeamServer(c, evil), duet.CodePermissionDenied)
	wantCode(t, s.DeleteTeamServer(c, "mallory", "qa", "orders"), duet.CodePermissionDenied)
	wantCode(t, s.SetTeamRole(c, "mallory", "qa", "mallory", duet.RoleOwner), duet.CodePermissionDenied)
	if list, err := s.FindTeamServers(c, "alice", "qa"); err != nil || len(list) != 1 || list[0].URL != orders.URL {
		t.Fatalf("orders after mallory's attempts: %+v %v", list, err)
	}
	if got := roles(); len(got) != 3 {
		t.Fatalf("members after mallory's attempts: %v", got)
	}

	// A maintainer removes a member, not another maintainer nor an owner,
	// and changes no role.
	if err := s.AddTeamMember(c, "mallory", "qa", "erin"); err != nil { // any member adds members, as members
		t.Fatal(err)
	}
	if got := roles(); got["erin"] != duet.RoleMember {
		t.Fatalf("erin joined as %q", got["erin"])
	}
	if err := s.AddTeamMember(c, "alice", "qa", "carol"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetTeamRole(c, "alice", "qa", "carol", duet.RoleMaintainer); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.RemoveTeamMember(c, "bob", "qa", "carol"), duet.CodePermissionDenied)
	wantCode(t, s.RemoveTeamMember(c, "bob", "qa", "alice"), duet.CodePermissionDenied)
	wantCode(t, s.SetTeamRole(c, "bob", "qa", "erin", duet.RoleMaintainer), duet.CodePermissionDenied)
	if err := s.RemoveTeamMember(c, "bob", "qa", "mallory"); err != nil {
		t.Fatalf("a maintainer removes a member: %v", err)
	}
	// Anyone may leave.
	if err := s.RemoveTeamMember(c, "erin", "qa", "erin"); err != nil {
		t.Fatalf("a member leaves: %v", err)
	}
	if err := s.RemoveTeamMember(c, "carol", "qa", "carol"); err != nil {
		t.Fatalf("a maintainer leaves: %v", err)
	}

	// The last owner stays: not leaving, not demoted, not removed.
	for _, err := range []error{
		s.RemoveTeamMember(c, "alice", "qa", "alice"),
		s.SetTeamRole(c, "alice", "qa", "alice", duet.RoleMaintainer),
	} {
		if duet.ErrorCode(err) != duet.CodeConflict || !strings.Contains(duet.ErrorMessage(err), "last owner") {
			t.Fatalf("the last owner: got %v, want CONFLICT", err)
		}
	}
	wantCode(t, s.SetTeamRole(c, "alice", "qa", "bob", "admin"), duet.CodeInvalidArgument)
	wantCode(t, s.SetTeamRole(c, "alice", "qa", "zed", duet.RoleMember), duet.CodeNotFound)
	wantCode(t, s.SetTeamRole(c, "zed", "qa", "bob", duet.RoleOwner), duet.CodeNotFound) // not a member: no such team
	// With a second owner, the first may step down or leave; the second,
	// now the last, may not.
	if err := s.SetTeamRole(c, "alice", "qa", "bob", duet.RoleOwner); err != nil {
		t.Fatal(err)
	}
	if err := s.SetTeamRole(c, "alice", "qa", "alice", duet.RoleMember); err != nil {
		t.Fatalf("an owner steps down beside another: %v", err)
	}
	wantCode(t, s.SetTeamRole(c, "alice", "qa", "bob", duet.RoleMember), duet.CodePermissionDenied) // alice is a member now
	if err := s.RemoveTeamMember(c, "bob", "qa", "alice"); err != nil {
		t.Fatalf("an owner removes a member: %v", err)
	}
	wantCode(t, s.RemoveTeamMember(c, "bob", "qa", "bob"), duet.CodeConflict)
	team, err := s.FindTeam(c, "bob", "qa")
	if err != nil || !slices.Equal(team.Members, []string{"bob"}) || team.Role("bob") != duet.RoleOwner {
		t.Fatalf("team qa at the end: %+v %v", team, err)
	}
}

// testTeamReferences: sharing with, handing to or releasing to a team is
// bound to a team that exists. A share with "team:ops" before ops exists
// is refused (task, suite, asset; transfer too), so whoever creates ops
// later reads nothing; a team deleted and re-created under its name by
// someone else inherits no share; user ids cannot take the "team:" form.
func testTeamReferences(t *testing.T, s duet.Store) {
	c := ctx(t)
	task := mustApply(t, s, "alice", suite("shop", "a")).Task

	// Before ops exists: every way of sharing with it is refused, naming it.
	noTeam := func(what string, err error) {
		t.Helper()
		if duet.ErrorCode(err) != duet.CodeInvalidArgument || !strings.Contains(duet.ErrorMessage(err), `"ops"`) {
			t.Errorf("%s with team:ops before it exists: got %v, want INVALID_ARGUMENT naming the team", what, err)
		}
	}
	noTeam("ShareTask", s.ShareTask(c, "alice", task.ID, "team:ops"))
	su := suite("shop2", "a")
	su.Task.SharedWith = []string{"bob", "team:ops"}
	_, err := s.ApplySuite(c, "alice", su)
	noTeam("ApplySuite", err)
	_, err = s.TransferTask(c, "alice", task.ID, "team:ops")
	noTeam("TransferTask", err)
	_, err = s.SaveAsset(c, &duet.Asset{Kind: duet.AssetSkill, Name: "login", Owner: "alice", Body: "log in", SharedWith: []string{"team:ops"}})
	noTeam("SaveAsset", err)
	// Mallory creates ops afterwards: she sees nothing of alice's.
	if _, err := s.CreateTeam(c, "mallory", "ops"); err != nil {
		t.Fatal(err)
	}
	if _, _, total, err := s.FindTasks(c, duet.TaskFilter{Viewer: "mallory"}); err != nil || total != 0 {
		t.Fatalf("mallory's tasks after creating ops: %d %v", total, err)
	}

	// User ids cannot be "team:…", whatever the door.
	_, err = s.ApplySuite(c, "team:qa", suite("x", "a"))
	wantCode(t, err, duet.CodeInvalidArgument)
	_, err = s.CreateTeam(c, "team:x", "x")
	wantCode(t, err, duet.CodeInvalidArgument)
	wantCode(t, s.AddTeamMember(c, "mallory", "ops", "team:qa"), duet.CodeInvalidArgument)
	wantCode(t, s.ShareTask(c, "alice", task.ID, "team:Not A Team"), duet.CodeInvalidArgument)

	// A share is bound to the team it was made with: alice shares with
	// qa (hers); its owner deletes qa; mallory creates a new qa and sees
	// nothing. Deleting needs an owner, and a team that owns tasks stays.
	if _, err := s.CreateTeam(c, "alice", "qa"); err != nil {
		t.Fatal(err)
	}
	if err := s.AddTeamMember(c, "alice", "qa", "bob"); err != nil {
		t.Fatal(err)
	}
	if err := s.ShareTask(c, "alice", task.ID, "team:qa"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FindTaskByID(c, "bob", task.ID); err != nil {
		t.Fatalf("bob, in qa: %v", err)
	}
	if _, err := s.SaveAsset(c, &duet.Asset{Kind: duet.AssetSkill, Name: "login", Owner: "alice", Body: "log in", SharedWith: []string{"team:qa", "carol"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FindAsset(c, "bob", duet.AssetSkill, "alice/login", 0); err != nil {
		t.Fatalf("bob, in qa, reads alice's asset: %v", err)
	}
	owned := mustApply(t, s, "alice", suite("team-owned", "a")).Task
	if _, err := s.TransferTask(c, "alice", owned.ID, "team:qa"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.DeleteTeam(c, "bob", "qa"), duet.CodePermissionDenied)
	wantCode(t, s.DeleteTeam(c, "mallory", "qa"), duet.CodeNotFound)
	if err := s.DeleteTeam(c, "alice", "qa"); duet.ErrorCode(err) != duet.CodeConflict || !strings.Contains(duet.ErrorMessage(err), "task") {
		t.Fatalf("deleting a team that owns a task: got %v, want CONFLICT", err)
	}
	if _, err := s.TransferTask(c, "alice", owned.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTeam(c, "alice", "qa"); err != nil {
		t.Fatalf("the owner deletes qa: %v", err)
	}
	if teams, err := s.FindTeams(c, "bob"); err != nil || len(teams) != 0 {
		t.Fatalf("bob's teams after qa was deleted: %+v %v", teams, err)
	}
	got, err := s.FindTaskByID(c, "alice", task.ID)
	if err != nil || slices.Contains(got.SharedWith, "team:qa") {
		t.Fatalf("the task's shares after qa was deleted: %+v %v", got, err)
	}
	again, err := s.CreateTeam(c, "mallory", "qa")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddTeamMember(c, "mallory", "qa", "bob"); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"mallory", "bob"} {
		if _, err := s.FindTaskByID(c, u, task.ID); duet.ErrorCode(err) != duet.CodeNotFound {
			t.Errorf("%s, in the re-created qa (%s), sees alice's task: %v", u, again.ID, err)
		}
	}
	if _, err := s.FindAsset(c, "mallory", duet.AssetSkill, "alice/login", 0); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("mallory, in the re-created qa, sees alice's asset: %v", err)
	}
	kept, err := s.FindAsset(c, "alice", duet.AssetSkill, "login", 0)
	if err != nil || !slices.Equal(kept.SharedWith, []string{"carol"}) {
		t.Errorf("alice's asset after qa was deleted: %+v %v", kept, err)
	}
	// Sharing with the new qa is a new share, bound to it.
	if err := s.ShareTask(c, "alice", task.ID, "team:qa"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FindTaskByID(c, "mallory", task.ID); err != nil {
		t.Fatalf("shared anew with the new qa: %v", err)
	}

	// TeamIDs binds names to the teams that exist now.
	ids, err := s.TeamIDs(c, []string{"qa", "ops", "nope"})
	if err != nil || len(ids) != 2 || ids["qa"] != again.ID || ids["ops"] == "" {
		t.Fatalf("TeamIDs: %v %v", ids, err)
	}
}

// testTokenLineage: a token creates only tokens that expire no later than
// itself (refused otherwise, nothing stored), and revoking a token revokes
// what it created, transitively, in one transaction — with the console
// sessions started with any of them — and nothing else.
func testTokenLineage(t *testing.T, s duet.Store) {
	c := ctx(t)
	hour := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	parent := &duet.Token{UserID: "alice", Name: "ci", Hash: "lin-parent", ExpiresAt: &hour}
	if err := s.CreateToken(c, parent); err != nil {
		t.Fatal(err)
	}
	// The review's reproduction: a 1h token mints a forever token.
	err := s.CreateToken(c, &duet.Token{UserID: "alice", Name: "forever", Hash: "lin-forever", ParentID: parent.ID})
	if duet.ErrorCode(err) != duet.CodePermissionDenied || !strings.Contains(duet.ErrorMessage(err), hour.Format(time.RFC3339)) {
		t.Fatalf("a 1h token creates one without expiry: got %v, want PERMISSION_DENIED naming the limit", err)
	}
	later := hour.Add(time.Minute)
	wantCode(t, s.CreateToken(c, &duet.Token{UserID: "alice", Hash: "lin-later", ParentID: parent.ID, ExpiresAt: &later}), duet.CodePermissionDenied)
	for _, h := range []string{"lin-forever", "lin-later"} {
		_, err := s.FindTokenByHash(c, h)
		wantCode(t, err, duet.CodeUnauthenticated)
	}
	wantCode(t, s.CreateToken(c, &duet.Token{UserID: "bob", Hash: "lin-bob", ParentID: parent.ID, ExpiresAt: &hour}), duet.CodeInvalidArgument)
	wantCode(t, s.CreateToken(c, &duet.Token{UserID: "alice", Hash: "lin-orphan", ParentID: "tok_nope", ExpiresAt: &hour}), duet.CodeUnauthenticated)

	half := time.Now().Add(30 * time.Minute).UTC().Truncate(time.Second)
	child := &duet.Token{UserID: "alice", Name: "job", Hash: "lin-child", ParentID: parent.ID, ExpiresAt: &half}
	if err := s.CreateToken(c, child); err != nil {
		t.Fatal(err)
	}
	same := &duet.Token{UserID: "alice", Name: "job2", Hash: "lin-same", ParentID: parent.ID, ExpiresAt: &hour} // as long as the parent: allowed
	if err := s.CreateToken(c, same); err != nil {
		t.Fatal(err)
	}
	grandchild := &duet.Token{UserID: "alice", Name: "step", Hash: "lin-grandchild", ParentID: child.ID, ExpiresAt: &half}
	if err := s.CreateToken(c, grandchild); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.CreateToken(c, &duet.Token{UserID: "alice", Hash: "lin-gc2", ParentID: child.ID, ExpiresAt: &hour}), duet.CodePermissionDenied)
	// A token without expiry may create one without expiry.
	root := &duet.Token{UserID: "alice", Name: "laptop", Hash: "lin-root"}
	if err := s.CreateToken(c, root); err != nil {
		t.Fatal(err)
	}
	free := &duet.Token{UserID: "alice", Name: "free", Hash: "lin-free", ParentID: root.ID}
	if err := s.CreateToken(c, free); err != nil {
		t.Fatal(err)
	}
	if got, err := s.FindTokenByHash(c, "lin-grandchild"); err != nil || got.ParentID != child.ID {
		t.Fatalf("the grandchild: %+v %v", got, err)
	}
	exp := time.Now().Add(time.Hour)
	if err := s.CreateSession(c, &duet.Session{Hash: "lin-sess", UserID: "alice", CSRF: "c", Method: "token", TokenID: grandchild.ID, ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}

	// The review's reproduction: revoking the parent leaves the child working.
	wantCode(t, s.DeleteToken(c, "bob", parent.ID), duet.CodeNotFound)
	if err := s.DeleteToken(c, "alice", parent.ID); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"lin-parent", "lin-child", "lin-same", "lin-grandchild"} {
		_, err := s.FindTokenByHash(c, h)
		if duet.ErrorCode(err) != duet.CodeUnauthenticated {
			t.Errorf("%s after its ancestor was revoked: got %v, want UNAUTHENTICATED", h, err)
		}
	}
	_, err = s.FindSession(c, "lin-sess")
	wantCode(t, err, duet.CodeUnauthenticated)
	for _, h := range []string{"lin-root", "lin-free"} {
		if _, err := s.FindTokenByHash(c, h); err != nil {
			t.Errorf("%s, of another tree, was revoked: %v", h, err)
		}
	}
	list, err := s.FindTokens(c, "alice")
	if err != nil || len(list) != 2 {
		t.Fatalf("alice's tokens left: %+v %v", list, err)
	}
	// Revoking a child leaves its parent.
	if err := s.DeleteToken(c, "alice", free.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FindTokenByHash(c, "lin-root"); err != nil {
		t.Fatalf("the parent of a revoked child: %v", err)
	}
}
