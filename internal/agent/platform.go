package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/duet-test/duet"
)

// PageInspector shows the agent the page under test: it opens a URL in a
// real browser and describes the page compactly (title, URL, headings,
// form fields, buttons, links, each with a CSS selector, and a text
// excerpt). internal/app implements it with internal/browser.
type PageInspector interface {
	// InspectPage opens rawURL emulating device ("" means the default
	// device) and returns the page's summary. Returns BROWSER_UNAVAILABLE,
	// BROWSER_ERROR, STEP_TIMEOUT, CANCELLED.
	InspectPage(ctx context.Context, rawURL, device string) (string, error)
}

// Names of the platform tools.
const (
	ToolGetTask     = "get_task"
	ToolListCases   = "list_cases"
	ToolInspectPage = "inspect_page"
	ToolListAssets  = "list_assets"
	ToolGetAsset    = "get_asset"
	ToolSubmitCase  = "submit_case"
)

// Size limits of platform tool results.
const (
	maxCaseSources = 32 << 10
	maxPageSummary = 12 << 10
)

// platformTools returns the read tools over the brief's task: get_task,
// list_cases, inspect_page (when d.Pages is set and the task has a base
// URL), and list_assets and get_asset (when d.Assets is set).
func platformTools(d *Deps, b *brief) []*Tool {
	tools := []*Tool{
		{
			Name:        ToolGetTask,
			Description: "Returns the task under test: id, name, description, base URL and device.",
			Call: func(ctx context.Context, _ json.RawMessage) (string, error) {
				t := b.Task
				return marshal(map[string]any{"id": t.ID, "name": t.Name, "description": t.Description,
					"baseUrl": t.BaseURL, "device": t.Device, "owner": t.Owner}), nil
			},
		},
		{
			Name: ToolListCases,
			Description: "Returns the task's existing cases (key, title, status, version) with their YAML sources, " +
				"to learn the style and avoid duplicates.",
			Call: func(ctx context.Context, _ json.RawMessage) (string, error) {
				var s strings.Builder
				if len(b.Cases) == 0 {
					return "The task has no cases yet.", nil
				}
				for _, c := range b.Cases {
					fmt.Fprintf(&s, "# %s — %s (%s, v%d", c.Key, c.Title, c.Status, c.Version)
					if c.Status == duet.CaseDraft {
						fmt.Fprintf(&s, ", by %s", c.CreatedBy)
					}
					s.WriteString(")\n")
					if c.Status != duet.CaseArchived && s.Len()+len(c.Source) < maxCaseSources {
						s.WriteString(c.Source)
					}
					s.WriteString("\n")
				}
				return s.String(), nil
			},
		},
	}
	if d.Pages != nil && b.Task.BaseURL != "" {
		tools = append(tools, &Tool{
			Name: ToolInspectPage,
			Description: "Opens a page of the product under test in a real browser and returns a compact summary: " +
				"title, URL, headings, form fields, buttons and links, each with a CSS selector to use in steps, and a " +
				"text excerpt. path is relative to the task's base URL (for example /order?orderId=A1001).",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"path and query relative to the task's base URL, e.g. /login"}},"required":["path"]}`),
			Call: func(ctx context.Context, raw json.RawMessage) (string, error) {
				var in struct {
					Path string `json:"path"`
				}
				if err := json.Unmarshal(raw, &in); err != nil || strings.TrimSpace(in.Path) == "" {
					return "", duet.Errorf(duet.CodeInvalidArgument, "inspect_page needs path, e.g. {\"path\":\"/\"}")
				}
				u, err := pageURL(b.Task.BaseURL, strings.TrimSpace(in.Path))
				if err != nil {
					return "", err
				}
				summary, err := d.Pages.InspectPage(ctx, u, b.Task.Device)
				if err != nil {
					return "", err
				}
				return truncate(summary, maxPageSummary), nil
			},
		})
	}
	if d.Assets != nil {
		tools = append(tools, &Tool{
			Name:        ToolListAssets,
			Description: "Lists the skills and prompts you may use (owner/name, version, description).",
			Call: func(ctx context.Context, _ json.RawMessage) (string, error) {
				assets, err := d.Assets.FindAssets(ctx, duet.AssetFilter{Viewer: b.User})
				if err != nil {
					return "", err
				}
				var s strings.Builder
				for _, a := range assets {
					if a.Kind == duet.AssetRule {
						continue // rules are in the instructions already
					}
					fmt.Fprintf(&s, "- %s %s v%d: %s\n", a.Kind, a.Ref(), a.Version, oneLine(a.Description))
				}
				if s.Len() == 0 {
					return "No skills or prompts.", nil
				}
				return s.String(), nil
			},
		}, &Tool{
			Name:        ToolGetAsset,
			Description: "Returns the text of a skill, rule or prompt by kind and name (or owner/name).",
			Parameters: json.RawMessage(`{"type":"object","properties":{"kind":{"type":"string","enum":["skill","rule","prompt"]},` +
				`"name":{"type":"string","description":"name or owner/name"}},"required":["kind","name"]}`),
			Call: func(ctx context.Context, raw json.RawMessage) (string, error) {
				var in struct {
					Kind duet.AssetKind `json:"kind"`
					Name string         `json:"name"`
				}
				if err := json.Unmarshal(raw, &in); err != nil || !in.Kind.Valid() || in.Name == "" {
					return "", duet.Errorf(duet.CodeInvalidArgument, "get_asset needs kind (skill, rule or prompt) and name")
				}
				a, err := d.Assets.FindAsset(ctx, b.User, in.Kind, in.Name, 0)
				if err != nil {
					return "", err
				}
				return fmt.Sprintf("%s %s v%d — %s\n\n%s", a.Kind, a.Ref(), a.Version, a.Description, a.Body), nil
			},
		})
	}
	return tools
}

// pageURL resolves path against base and refuses any other origin: the
// agent's browser only visits the product under test.
func pageURL(base, path string) (string, error) {
	bu, err := url.Parse(base)
	if err != nil {
		return "", duet.Errorf(duet.CodeInvalidArgument, "the task's base URL is invalid")
	}
	ref, err := url.Parse(path)
	if err != nil {
		return "", duet.Errorf(duet.CodeInvalidArgument, "path %q is not a URL path", path)
	}
	var u *url.URL
	if ref.IsAbs() || strings.HasPrefix(path, "//") {
		u = ref
	} else {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		u, err = url.Parse(strings.TrimRight(base, "/") + path)
		if err != nil {
			return "", duet.Errorf(duet.CodeInvalidArgument, "path %q is not a URL path", path)
		}
	}
	if !strings.EqualFold(u.Scheme, bu.Scheme) || !strings.EqualFold(u.Host, bu.Host) {
		return "", duet.Errorf(duet.CodeInvalidArgument, "inspect_page only opens pages of the task's base URL %s", base)
	}
	return u.String(), nil
}

func marshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "{}"
	}
	return string(b)
}
