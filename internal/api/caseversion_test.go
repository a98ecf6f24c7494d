package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/app/apptest"
	"github.com/duet-test/duet/internal/linediff"
)

// TestCaseVersionsAreForWhoeverSeesTheCase: each apply that changes a case
// is a version of it, and so is the recorder's save (via recorder); over
// REST its owner and a user the task is shared with list the versions,
// newest first, read one with its YAML and see the line diff of two
// (the changed line of the case's YAML removed and added, the rest kept); anyone else gets
// NOT_FOUND, as for get_test_case; a version not kept is NOT_FOUND, a
// diff that names one end only INVALID_ARGUMENT.
func TestCaseVersionsAreForWhoeverSeesTheCase(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	v1 := "task: {name: shop, baseURL: 'http://127.0.0.1:9', sharedWith: [bob]}\ncases:\n  - key: a\n    title: A\n    steps:\n      - set: {x: '1'}\n      - set: {y: '2'}\n"
	v2 := strings.Replace(v1, "{x: '1'}", "{x: '3'}", 1)
	var applied duet.ApplyResult
	for _, src := range []string{v1, v1, v2} { // the same suite twice is one version
		status, body, _ := e.Call("alice", "POST", "/api/v1/tasks", map[string]any{"source": src})
		if status != http.StatusOK && status != http.StatusCreated {
			t.Fatalf("apply: %d %s", status, body)
		}
		json.Unmarshal(body, &applied)
	}
	caseID := applied.Cases[0].ID
	if _, err := e.App.API.SaveCase(t.Context(), duet.Caller{UserID: "alice", Source: duet.SourceWeb},
		api.SaveCaseIn{TaskID: applied.Task.ID, Source: "key: a\ntitle: A\nsteps:\n  - set: {x: '4'}\n"}); err != nil {
		t.Fatal(err)
	}
	base := "/api/v1/cases/" + caseID + "/versions"
	for _, user := range []string{"alice", "bob"} {
		var list api.CaseVersions
		status, body, _ := e.Call(user, "GET", base+"?from=1&to=2", nil)
		if err := json.Unmarshal(body, &list); err != nil || status != http.StatusOK {
			t.Fatalf("%s lists the versions: %d %s", user, status, body)
		}
		if list.Current != 3 || len(list.Versions) != 3 || list.Versions[0].Version != 3 || list.Versions[0].Via != duet.SavedByRecorder ||
			list.Versions[1].Via != duet.SavedByApply || list.Versions[2].Version != 1 || list.Versions[2].SavedBy != "alice" || list.Versions[0].Source != "" {
			t.Fatalf("%s's list: %s", user, body)
		}
		d := list.Diff
		if d == nil || d.From != 1 || d.To != 2 || d.Added != 1 || d.Removed != 1 {
			t.Fatalf("%s's diff: %s", user, body)
		}
		var ops []string
		for _, l := range d.Lines {
			if l.Op != linediff.Kept {
				ops = append(ops, string(l.Op)+strings.TrimSpace(l.Text))
			}
		}
		if strings.Join(ops, "|") != `-x: "1"|+x: "3"` || len(d.Lines) < 4 {
			t.Errorf("%s's diff lines: %+v", user, d.Lines)
		}
		var one duet.CaseVersion
		status, body, _ = e.Call(user, "GET", base+"/1", nil)
		if err := json.Unmarshal(body, &one); err != nil || status != http.StatusOK || !strings.Contains(one.Source, `x: "1"`) || one.Version != 1 {
			t.Fatalf("%s reads version 1: %d %s", user, status, body)
		}
	}
	var page api.CaseVersions
	status, body, _ := e.Call("alice", "GET", base+"?limit=2", nil)
	if err := json.Unmarshal(body, &page); err != nil || status != http.StatusOK || len(page.Versions) != 2 || page.NextCursor == "" {
		t.Fatalf("the first page: %d %s", status, body)
	}
	status, body, _ = e.Call("alice", "GET", base+"?limit=2&cursor="+page.NextCursor, nil)
	page = api.CaseVersions{}
	if err := json.Unmarshal(body, &page); err != nil || status != http.StatusOK || len(page.Versions) != 1 || page.Versions[0].Version != 1 || page.NextCursor != "" {
		t.Fatalf("the second page: %d %s", status, body)
	}
	for _, path := range []string{base, base + "?from=1&to=2", base + "/1"} {
		if status, body, _ := e.Call("root", "GET", path, nil); status != http.StatusNotFound || !strings.Contains(string(body), "NOT_FOUND") {
			t.Errorf("root, who cannot see the case, GET %s: %d %s", path, status, body)
		}
	}
	for path, want := range map[string]int{
		base + "/9":           http.StatusNotFound,
		base + "?from=1&to=9": http.StatusNotFound,
		base + "?from=1":      http.StatusBadRequest,
		base + "/x":           http.StatusBadRequest,
		base + "?cursor=x":    http.StatusBadRequest,
	} {
		if status, body, _ := e.Call("alice", "GET", path, nil); status != want {
			t.Errorf("GET %s: %d %s, want %d", path, status, body, want)
		}
	}
}
