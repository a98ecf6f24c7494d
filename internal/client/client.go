// Package client is what the duet command line does things through: one
// interface, Client, with the operations of the REST API and the console
// (internal/api's Service), and two implementations — Local, the Service in
// this process with callSource cli, and Remote, a Duet server's REST API
// with a personal access token (duet --server URL). A command is written
// once against Client, so identity, validation, governance and audit are
// the Service's in both modes, and the output and the exit code are the
// same (docs/architecture.md, "The CLI is a client of the service").
package client

import (
	"context"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/report"
)

// JUnitAttachmentsDir is the directory, beside the JUnit file, that
// JUnitFiles writes the attachments into: the name the paths in a
// server's JUnit zip start with, so both clients write the same files.
const JUnitAttachmentsDir = "junit-attachments"

// Client is every operation a person does through the command line, as
// the user it acts as.
type Client interface {
	// User is the user the client acts as.
	User() string
	// Server is the URL of the Duet server (remote), "" in this process.
	Server() string
	// Close releases the client (the app of a local one).
	Close()

	Me(ctx context.Context) (api.Me, error)

	// Tasks and cases. A task reference is its id or its name
	// (catalog.FindTask).
	ListTasks(ctx context.Context, in catalog.ListTasksIn) (catalog.ListTasksOut, error)
	GetTask(ctx context.Context, task string) (catalog.GetTaskOut, error)
	ListCases(ctx context.Context, in catalog.ListCasesIn) (catalog.ListCasesOut, error)
	CaseSources(ctx context.Context, task, cursor string, limit int) (api.TaskCases, error)
	ApplySuite(ctx context.Context, in api.ApplyIn) (*duet.ApplyResult, error)
	ShareTask(ctx context.Context, task string, in api.ShareIn) (api.Sharing, error)
	UnshareTask(ctx context.Context, task, with string) (api.Sharing, error)
	TransferTask(ctx context.Context, task string, in api.TransferIn) (*duet.TaskTransfer, error)
	ListTaskServers(ctx context.Context, task string) (api.TaskServers, error)
	GetPostRun(ctx context.Context, task string) (api.PostRun, error)
	ApprovePostRun(ctx context.Context, task string, in api.PostRunApprovalIn) (api.PostRun, error)
	GetCase(ctx context.Context, caseID string) (catalog.GetCaseOut, error)
	// CaseAIPlans are the cached plans of a case's acting AI steps;
	// FreezeCase proposes the case with them written out, as a draft.
	CaseAIPlans(ctx context.Context, caseID string) (api.AIPlanList, error)
	FreezeCase(ctx context.Context, caseID string) (api.FreezeOut, error)
	// ClearAIPlans removes the cached plans of the user's task (of one
	// case of it).
	ClearAIPlans(ctx context.Context, in api.ClearAIPlansIn) (api.ClearAIPlansOut, error)
	GetApproval(ctx context.Context, caseID string) (api.Approval, error)
	ApproveCase(ctx context.Context, caseID string, in api.ApprovalIn) (api.Approval, error)
	RevokeApproval(ctx context.Context, caseID string) error
	ListApprovals(ctx context.Context, in api.ApprovalsIn) (api.ApprovalList, error)
	ListGenerations(ctx context.Context, in api.GenerationsIn) (api.GenerationList, error)
	// GenerateCase has the test agent write a case (the agent of this
	// process, or of the server); progress receives its progress lines
	// when the client can pass them on (a local one).
	GenerateCase(ctx context.Context, in api.GenerateIn, progress func(string)) (api.Generated, error)

	// Runs.
	// StartRun starts a run; origin is the CI job starting it (nil: none).
	StartRun(ctx context.Context, in catalog.StartRunIn, origin *duet.RunOrigin) (catalog.StartRunOut, error)
	// RunExit is the exit code of a finished run (api.Service.RunExit).
	RunExit(ctx context.Context, runID string, in api.RunExitIn) (report.Exit, error)
	// ExecuteHere executes a run in this process, when the client is one
	// (a local run is executed by the command that started it, unless a
	// worker takes it first); the returned channel closes when it is done.
	// A remote server's workers execute its runs: the channel is closed.
	ExecuteHere(ctx context.Context, runID string) <-chan struct{}
	// FollowRun sends the run's progress to send until the run is final or
	// ctx ends (api.Service.FollowRun; remote: its server-sent events).
	FollowRun(ctx context.Context, runID string, send func(api.Progress) error) error
	GetRun(ctx context.Context, in catalog.GetRunIn) (catalog.GetRunOut, error)
	GetExecution(ctx context.Context, executionID string) (catalog.GetExecutionOut, error)
	ListRuns(ctx context.Context, in api.RunListIn) (api.RunList, error)
	CancelRun(ctx context.Context, runID string) (api.RunSummary, error)
	Report(ctx context.Context, runID string, f report.Format, p report.Page) (api.Report, error)
	// JUnitFiles writes the JUnit report of a run as the user sees it to
	// path on this machine, and the screenshots and traces of its failed
	// cases (the run's executor's only) into JUnitAttachmentsDir beside it,
	// named in each case's system-out (docs/ci.md). An error writing the
	// files carries no duet.Code (it is the file system's).
	JUnitFiles(ctx context.Context, runID, path string) (api.JUnitWritten, error)
	ListStopRequests(ctx context.Context, in api.StopRequestsIn) (api.StopRequestList, error)
	DecideStop(ctx context.Context, requestID string, in api.StopDecisionIn) (api.StopDecision, error)
	ListDevices(ctx context.Context) (api.DeviceList, error)

	// Trace is the trace zip of a case of a run (its key, case id or
	// execution id) and the case's key: the run's executor's only.
	Trace(ctx context.Context, runID, ref string) (data []byte, caseKey string, err error)
	ListBaselines(ctx context.Context, in api.BaselinesIn) (api.BaselineList, error)
	DecideBaseline(ctx context.Context, id string, approve bool) (*duet.Baseline, error)

	// Schedules. A task reference is its id or its name.
	CreateSchedule(ctx context.Context, in api.ScheduleIn) (api.ScheduleView, error)
	ListSchedules(ctx context.Context, in api.ScheduleListIn) (api.ScheduleList, error)
	PauseSchedule(ctx context.Context, id string) (api.ScheduleView, error)
	ResumeSchedule(ctx context.Context, id string) (api.ScheduleView, error)
	RemoveSchedule(ctx context.Context, id string) error
	// ContractAlerts are the cases of a task an MCP tool changed under.
	ContractAlerts(ctx context.Context, task string) (api.AlertList, error)

	// Webhooks of a task the user owns (by its id).
	CreateWebhook(ctx context.Context, in api.WebhookIn) (api.WebhookView, error)
	ListWebhooks(ctx context.Context, taskID string) (api.WebhookList, error)
	DeleteWebhook(ctx context.Context, id string) error
	ListDeliveries(ctx context.Context, webhookID string, limit int) (api.DeliveryList, error)
	Redeliver(ctx context.Context, deliveryID string) (*duet.WebhookDelivery, error)

	// Secrets (${secrets.NAME}): the user's, never shown again.
	SetSecret(ctx context.Context, in api.SecretIn) (api.SecretSet, error)
	ListSecrets(ctx context.Context) (api.SecretList, error)
	DeleteSecret(ctx context.Context, name string) error

	// MCP servers. A server reference is its name or its serverKey.
	ListServers(ctx context.Context) (api.ServerList, error)
	RegisterServer(ctx context.Context, in api.RegisterIn) (api.ServerDetail, error)
	GetServer(ctx context.Context, server string) (api.ServerDetail, error)
	SyncServer(ctx context.Context, server string) (api.ServerDetail, error)
	RemoveServer(ctx context.Context, server string) error
	// LoginServer authorizes Duet to call an OAuth registration as the
	// user; a person's authorization (the code grant) asks through the
	// mcpclient.Authorizer in ctx, which only a local client passes on.
	LoginServer(ctx context.Context, server string, in api.LoginIn) (api.ServerDetail, error)
	CallTool(ctx context.Context, server, tool string, in api.CallIn) (api.CallOut, error)
	// ServerDiff is what changed between the server's current archived
	// catalog and the one back changing syncs before (0: the last).
	ServerDiff(ctx context.Context, server string, back int) (api.CatalogDiff, error)
	ListInvocations(ctx context.Context, in api.RecordsIn) (api.InvocationList, error)

	// AI assets.
	ListAssets(ctx context.Context, in api.AssetListIn) (api.AssetList, error)
	SaveAsset(ctx context.Context, in api.AssetIn) (api.AssetSaved, error)
	// GetAsset's ref is "name" (the user's) or "owner/name".
	GetAsset(ctx context.Context, kind duet.AssetKind, ref string, version int) (*duet.Asset, error)
	DeleteAsset(ctx context.Context, kind duet.AssetKind, name string) error

	// Teams.
	ListTeams(ctx context.Context) (api.TeamList, error)
	CreateTeam(ctx context.Context, in api.TeamIn) (*duet.Team, error)
	GetTeam(ctx context.Context, team string) (api.TeamDetail, error)
	AddMember(ctx context.Context, team string, in api.MemberIn) (api.TeamDetail, error)
	RemoveMember(ctx context.Context, team, user string) error
	SetRole(ctx context.Context, team, user string, in api.RoleIn) (api.TeamDetail, error)
	DeleteTeam(ctx context.Context, team string) error
	AddTeamServer(ctx context.Context, team string, in api.TeamServerIn) (*duet.TeamServer, error)
	RemoveTeamServer(ctx context.Context, team, name string) error
	RegisterTeamServer(ctx context.Context, team, name string, in api.TeamRegisterIn) (api.ServerDetail, error)

	// Tokens and audit.
	ListTokens(ctx context.Context) (api.TokenList, error)
	CreateToken(ctx context.Context, in api.TokenIn) (api.TokenCreated, error)
	RevokeToken(ctx context.Context, id string) error
	ListAudit(ctx context.Context, in api.RecordsIn) (api.AuditList, error)
}
