package client

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/report"
)

// Local is the Client of a command in this process: every operation is
// the app's api.Service's, called as the user with callSource cli — the
// same identity, validation, governance and audit as REST and the console.
// It hands out nothing else of the app: a command never sees the store.
type Local struct {
	a    *app.App
	svc  *api.Service
	user string
}

// NewLocal returns the Client acting as user over a; Close closes a.
func NewLocal(a *app.App, user string) *Local {
	return &Local{a: a, svc: a.API, user: user}
}

func (l *Local) caller() duet.Caller { return duet.Caller{UserID: l.user, Source: duet.SourceCLI} }

// User implements Client.
func (l *Local) User() string { return l.user }

// Server implements Client: "" (this process).
func (l *Local) Server() string { return "" }

// Close closes the app.
func (l *Local) Close() { l.a.Close() }

// ExecuteHere executes the run in this process (unless a worker holds it
// already). The execution outlives ctx: ending ctx (Ctrl-C) is a
// cancellation request (CancelRun), not an abandoned run.
func (l *Local) ExecuteHere(ctx context.Context, runID string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := l.a.Worker.ExecuteRun(context.WithoutCancel(ctx), runID); err != nil {
			l.a.Logger.Error("executing the run", slog.String("run", runID), slog.Any("err", err))
		}
	}()
	return done
}

// FollowRun implements Client.
func (l *Local) FollowRun(ctx context.Context, runID string, send func(api.Progress) error) error {
	return l.svc.FollowRun(ctx, l.caller(), runID, send)
}

// ListCases implements Client.
func (l *Local) ListCases(ctx context.Context, in catalog.ListCasesIn) (catalog.ListCasesOut, error) {
	return l.svc.ListCases(ctx, l.caller(), in)
}

// GenerateCase implements Client.
func (l *Local) GenerateCase(ctx context.Context, in api.GenerateIn, progress func(string)) (api.Generated, error) {
	return l.svc.GenerateCase(ctx, l.caller(), in, progress)
}

// CaseSources implements Client.
func (l *Local) CaseSources(ctx context.Context, task, cursor string, limit int) (api.TaskCases, error) {
	return l.svc.CaseSources(ctx, l.caller(), task, cursor, limit)
}

// Report implements Client.
func (l *Local) Report(ctx context.Context, runID string, f report.Format, p report.Page) (api.Report, error) {
	return l.svc.RunReportPage(ctx, l.caller(), runID, f, p)
}

// JUnitFiles implements Client: the service writes the files
// (report.WriteJUnitFiles), reading the attachments from this instance's
// artifacts.
func (l *Local) JUnitFiles(ctx context.Context, runID, path string) (api.JUnitWritten, error) {
	return l.svc.WriteJUnitFiles(ctx, l.caller(), runID, report.Page{Limit: 1000},
		report.JUnitFiles{Path: path, Dir: filepath.Join(filepath.Dir(path), JUnitAttachmentsDir)})
}

func (l *Local) Me(ctx context.Context) (api.Me, error) {
	return l.svc.Me(ctx, l.caller())
}

func (l *Local) ListTasks(ctx context.Context, in catalog.ListTasksIn) (catalog.ListTasksOut, error) {
	return l.svc.ListTasks(ctx, l.caller(), in)
}

func (l *Local) GetTask(ctx context.Context, task string) (catalog.GetTaskOut, error) {
	return l.svc.GetTask(ctx, l.caller(), task)
}

func (l *Local) ApplySuite(ctx context.Context, in api.ApplyIn) (*duet.ApplyResult, error) {
	return l.svc.ApplySuite(ctx, l.caller(), in)
}

func (l *Local) ShareTask(ctx context.Context, task string, in api.ShareIn) (api.Sharing, error) {
	return l.svc.ShareTask(ctx, l.caller(), task, in)
}

func (l *Local) UnshareTask(ctx context.Context, task, with string) (api.Sharing, error) {
	return l.svc.UnshareTask(ctx, l.caller(), task, with)
}

func (l *Local) TransferTask(ctx context.Context, task string, in api.TransferIn) (*duet.TaskTransfer, error) {
	return l.svc.TransferTask(ctx, l.caller(), task, in)
}

func (l *Local) ListTaskServers(ctx context.Context, task string) (api.TaskServers, error) {
	return l.svc.ListTaskServers(ctx, l.caller(), task)
}

func (l *Local) GetPostRun(ctx context.Context, task string) (api.PostRun, error) {
	return l.svc.GetPostRun(ctx, l.caller(), task)
}

func (l *Local) ApprovePostRun(ctx context.Context, task string, in api.PostRunApprovalIn) (api.PostRun, error) {
	return l.svc.ApprovePostRun(ctx, l.caller(), task, in)
}

func (l *Local) GetCase(ctx context.Context, caseID string) (catalog.GetCaseOut, error) {
	return l.svc.GetCase(ctx, l.caller(), caseID)
}

func (l *Local) CaseAIPlans(ctx context.Context, caseID string) (api.AIPlanList, error) {
	return l.svc.ListCaseAIPlans(ctx, l.caller(), caseID)
}

func (l *Local) FreezeCase(ctx context.Context, caseID string) (api.FreezeOut, error) {
	return l.svc.FreezeCase(ctx, l.caller(), caseID)
}

func (l *Local) ClearAIPlans(ctx context.Context, in api.ClearAIPlansIn) (api.ClearAIPlansOut, error) {
	return l.svc.ClearAIPlans(ctx, l.caller(), in)
}

func (l *Local) GetApproval(ctx context.Context, caseID string) (api.Approval, error) {
	return l.svc.GetApproval(ctx, l.caller(), caseID)
}

func (l *Local) ApproveCase(ctx context.Context, caseID string, in api.ApprovalIn) (api.Approval, error) {
	return l.svc.ApproveCase(ctx, l.caller(), caseID, in)
}

func (l *Local) ListApprovals(ctx context.Context, in api.ApprovalsIn) (api.ApprovalList, error) {
	return l.svc.ListApprovals(ctx, l.caller(), in)
}

func (l *Local) ListGenerations(ctx context.Context, in api.GenerationsIn) (api.GenerationList, error) {
	return l.svc.ListGenerations(ctx, l.caller(), in)
}

func (l *Local) StartRun(ctx context.Context, in catalog.StartRunIn, origin *duet.RunOrigin) (catalog.StartRunOut, error) {
	return l.svc.StartRunFrom(ctx, l.caller(), in, origin)
}

func (l *Local) RunExit(ctx context.Context, runID string, in api.RunExitIn) (report.Exit, error) {
	return l.svc.RunExit(ctx, l.caller(), runID, in)
}

func (l *Local) GetRun(ctx context.Context, in catalog.GetRunIn) (catalog.GetRunOut, error) {
	return l.svc.GetRun(ctx, l.caller(), in)
}

func (l *Local) GetExecution(ctx context.Context, executionID string) (catalog.GetExecutionOut, error) {
	return l.svc.GetExecution(ctx, l.caller(), executionID)
}

func (l *Local) ListRuns(ctx context.Context, in api.RunListIn) (api.RunList, error) {
	return l.svc.ListRuns(ctx, l.caller(), in)
}

func (l *Local) CancelRun(ctx context.Context, runID string) (api.RunSummary, error) {
	return l.svc.CancelRun(ctx, l.caller(), runID)
}

func (l *Local) ListStopRequests(ctx context.Context, in api.StopRequestsIn) (api.StopRequestList, error) {
	return l.svc.ListStopRequests(ctx, l.caller(), in)
}

func (l *Local) DecideStop(ctx context.Context, requestID string, in api.StopDecisionIn) (api.StopDecision, error) {
	return l.svc.DecideStop(ctx, l.caller(), requestID, in)
}

func (l *Local) ListDevices(ctx context.Context) (api.DeviceList, error) {
	return l.svc.ListDevices(ctx, l.caller())
}

func (l *Local) ListServers(ctx context.Context) (api.ServerList, error) {
	return l.svc.ListServers(ctx, l.caller())
}

func (l *Local) RegisterServer(ctx context.Context, in api.RegisterIn) (api.ServerDetail, error) {
	return l.svc.RegisterServer(ctx, l.caller(), in)
}

func (l *Local) GetServer(ctx context.Context, server string) (api.ServerDetail, error) {
	return l.svc.GetServer(ctx, l.caller(), server)
}

func (l *Local) SyncServer(ctx context.Context, server string) (api.ServerDetail, error) {
	return l.svc.SyncServer(ctx, l.caller(), server)
}

func (l *Local) LoginServer(ctx context.Context, server string, in api.LoginIn) (api.ServerDetail, error) {
	return l.svc.LoginServer(ctx, l.caller(), server, in)
}

func (l *Local) CallTool(ctx context.Context, server, tool string, in api.CallIn) (api.CallOut, error) {
	return l.svc.CallTool(ctx, l.caller(), server, tool, in)
}

func (l *Local) ListInvocations(ctx context.Context, in api.RecordsIn) (api.InvocationList, error) {
	return l.svc.ListInvocations(ctx, l.caller(), in)
}

func (l *Local) ListAssets(ctx context.Context, in api.AssetListIn) (api.AssetList, error) {
	return l.svc.ListAssets(ctx, l.caller(), in)
}

func (l *Local) SaveAsset(ctx context.Context, in api.AssetIn) (api.AssetSaved, error) {
	return l.svc.SaveAsset(ctx, l.caller(), in)
}

func (l *Local) GetAsset(ctx context.Context, kind duet.AssetKind, ref string, version int) (*duet.Asset, error) {
	return l.svc.GetAsset(ctx, l.caller(), kind, ref, version)
}

func (l *Local) ListTeams(ctx context.Context) (api.TeamList, error) {
	return l.svc.ListTeams(ctx, l.caller())
}

func (l *Local) CreateTeam(ctx context.Context, in api.TeamIn) (*duet.Team, error) {
	return l.svc.CreateTeam(ctx, l.caller(), in)
}

func (l *Local) GetTeam(ctx context.Context, team string) (api.TeamDetail, error) {
	return l.svc.GetTeam(ctx, l.caller(), team)
}

func (l *Local) AddMember(ctx context.Context, team string, in api.MemberIn) (api.TeamDetail, error) {
	return l.svc.AddMember(ctx, l.caller(), team, in)
}

func (l *Local) SetRole(ctx context.Context, team, user string, in api.RoleIn) (api.TeamDetail, error) {
	return l.svc.SetRole(ctx, l.caller(), team, user, in)
}

func (l *Local) AddTeamServer(ctx context.Context, team string, in api.TeamServerIn) (*duet.TeamServer, error) {
	return l.svc.AddTeamServer(ctx, l.caller(), team, in)
}

func (l *Local) RegisterTeamServer(ctx context.Context, team, name string, in api.TeamRegisterIn) (api.ServerDetail, error) {
	return l.svc.RegisterTeamServer(ctx, l.caller(), team, name, in)
}

func (l *Local) ListTokens(ctx context.Context) (api.TokenList, error) {
	return l.svc.ListTokens(ctx, l.caller())
}

func (l *Local) CreateToken(ctx context.Context, in api.TokenIn) (api.TokenCreated, error) {
	return l.svc.CreateToken(ctx, l.caller(), in)
}

func (l *Local) ListAudit(ctx context.Context, in api.RecordsIn) (api.AuditList, error) {
	return l.svc.ListAudit(ctx, l.caller(), in)
}

func (l *Local) RevokeApproval(ctx context.Context, caseID string) error {
	_, err := l.svc.RevokeApproval(ctx, l.caller(), caseID)
	return err
}

func (l *Local) RemoveServer(ctx context.Context, server string) error {
	_, err := l.svc.RemoveServer(ctx, l.caller(), server)
	return err
}

func (l *Local) DeleteAsset(ctx context.Context, kind duet.AssetKind, name string) error {
	_, err := l.svc.DeleteAsset(ctx, l.caller(), kind, name)
	return err
}

func (l *Local) RemoveMember(ctx context.Context, team, user string) error {
	_, err := l.svc.RemoveMember(ctx, l.caller(), team, user)
	return err
}

func (l *Local) DeleteTeam(ctx context.Context, team string) error {
	_, err := l.svc.DeleteTeam(ctx, l.caller(), team)
	return err
}

func (l *Local) RemoveTeamServer(ctx context.Context, team, name string) error {
	_, err := l.svc.RemoveTeamServer(ctx, l.caller(), team, name)
	return err
}

func (l *Local) RevokeToken(ctx context.Context, id string) error {
	_, err := l.svc.RevokeToken(ctx, l.caller(), id)
	return err
}

var _ Client = (*Local)(nil)

// Trace implements Client.
func (l *Local) Trace(ctx context.Context, runID, ref string) ([]byte, string, error) {
	data, x, err := l.svc.Trace(ctx, l.caller(), runID, ref)
	if err != nil {
		return nil, "", err
	}
	return data, x.CaseKey, nil
}

func (l *Local) ListBaselines(ctx context.Context, in api.BaselinesIn) (api.BaselineList, error) {
	return l.svc.ListBaselines(ctx, l.caller(), in)
}

func (l *Local) DecideBaseline(ctx context.Context, id string, approve bool) (*duet.Baseline, error) {
	return l.svc.DecideBaseline(ctx, l.caller(), id, approve)
}

func (l *Local) CreateSchedule(ctx context.Context, in api.ScheduleIn) (api.ScheduleView, error) {
	return l.svc.CreateSchedule(ctx, l.caller(), in)
}

func (l *Local) ListSchedules(ctx context.Context, in api.ScheduleListIn) (api.ScheduleList, error) {
	return l.svc.ListSchedules(ctx, l.caller(), in)
}

func (l *Local) PauseSchedule(ctx context.Context, id string) (api.ScheduleView, error) {
	return l.svc.PauseSchedule(ctx, l.caller(), id)
}

func (l *Local) ResumeSchedule(ctx context.Context, id string) (api.ScheduleView, error) {
	return l.svc.ResumeSchedule(ctx, l.caller(), id)
}

func (l *Local) RemoveSchedule(ctx context.Context, id string) error {
	_, err := l.svc.RemoveSchedule(ctx, l.caller(), id)
	return err
}

func (l *Local) ContractAlerts(ctx context.Context, task string) (api.AlertList, error) {
	return l.svc.ContractAlerts(ctx, l.caller(), task)
}

func (l *Local) SetSecret(ctx context.Context, in api.SecretIn) (api.SecretSet, error) {
	return l.svc.SetSecret(ctx, l.caller(), in)
}

func (l *Local) ListSecrets(ctx context.Context) (api.SecretList, error) {
	return l.svc.ListSecrets(ctx, l.caller(), "")
}

func (l *Local) DeleteSecret(ctx context.Context, name string) error {
	_, err := l.svc.DeleteSecret(ctx, l.caller(), "", name)
	return err
}

func (l *Local) ServerDiff(ctx context.Context, server string, back int) (api.CatalogDiff, error) {
	return l.svc.ServerDiff(ctx, l.caller(), server, back)
}

func (l *Local) CreateWebhook(ctx context.Context, in api.WebhookIn) (api.WebhookView, error) {
	return l.svc.CreateWebhook(ctx, l.caller(), in)
}

func (l *Local) ListWebhooks(ctx context.Context, taskID string) (api.WebhookList, error) {
	return l.svc.ListWebhooks(ctx, l.caller(), taskID)
}

func (l *Local) DeleteWebhook(ctx context.Context, id string) error {
	_, err := l.svc.DeleteWebhook(ctx, l.caller(), id)
	return err
}

func (l *Local) ListDeliveries(ctx context.Context, webhookID string, limit int) (api.DeliveryList, error) {
	return l.svc.ListDeliveries(ctx, l.caller(), webhookID, limit)
}

func (l *Local) Redeliver(ctx context.Context, deliveryID string) (*duet.WebhookDelivery, error) {
	return l.svc.Redeliver(ctx, l.caller(), deliveryID)
}
