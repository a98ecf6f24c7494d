package webui

import (
	"fmt"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
)

// mcpProblem is an error on the MCP pages as the console shows it: what
// happened, and what to do about it here, in the console, with the form
// at hand — never a command to type in a terminal, which the messages of
// the MCP client give (they are written for the CLI), unless the console
// has no way to do it (an OAuth sign-in).
type mcpProblem struct {
	Code duet.Code
	// What happened: the client's own words without the CLI's advice.
	What string
	// Advice is what to do, naming the form or button on the page.
	Advice string
	// Replace opens the page's "Replace the registration" form.
	Replace bool
	// Link, when set, is where the action is (another page).
	Link string
}

// cliAdvice returns msg without the advice the MCP client gives a CLI
// user — the clause that names a `duet ...` command, and what follows —
// or "" when the message is nothing but that advice.
func cliAdvice(msg string) string {
	i := strings.Index(msg, "`duet ")
	if i < 0 {
		return msg
	}
	head := msg[:i]
	cut := max(strings.LastIndex(head, "; "), strings.LastIndex(head, ": "))
	if cut < 0 {
		return ""
	}
	return strings.TrimSpace(head[:cut])
}

// serverProblem explains err, from syncing, registering or calling the
// registration reg (its name and how it authenticates), in the console's
// words. The advice names the server page's forms: "Replace the
// registration" and "Sync the catalog".
func serverProblem(err error, reg api.ServerView) mcpProblem {
	p := mcpProblem{Code: duet.ErrorCode(err), What: cliAdvice(duet.ErrorMessage(err))}
	name := fmt.Sprintf("%q", reg.Name)
	switch p.Code {
	case duet.CodeMCPAuthFailed:
		switch {
		case reg.Auth == duet.AuthOAuth:
			p.Advice = name + " signs you in with OAuth, and that sign-in happens in a browser window the console cannot open yet: run `duet server login " +
				reg.Name + "` in a terminal, then press Sync the catalog. Or, if the server also takes a token, give it one under Replace the registration."
		case reg.Auth == duet.AuthClientCredentials:
			p.Advice = "The authorization server refused the OAuth client registered for " + name + ": check the client's permissions there, then press Sync the catalog."
		case len(reg.HeaderNames) == 0:
			p.Advice, p.Replace = name+" asks for credentials and your registration has none: enter a bearer token (or headers) under Replace the registration below and press Replace and sync.", true
		default:
			p.Advice, p.Replace = name+" refused the credentials of your registration ("+strings.Join(reg.HeaderNames, ", ")+
				" header): enter new ones under Replace the registration below and press Replace and sync.", true
		}
	case duet.CodeMCPUnreachable, duet.CodeMCPCallTimeout:
		p.Advice, p.Replace = "If the server is down or slow, press Sync the catalog once it is back. If it moved, enter its new address under Replace the registration below.", true
	case duet.CodeMCPProtocolMismatch:
		p.Advice, p.Replace = "The address must be the server's MCP endpoint (Streamable HTTP, often ending in /mcp): enter the right one under Replace the registration below.", true
	case duet.CodeURLRefused:
		p.Advice, p.Replace = "Enter an address Duet may reach under Replace the registration below (credentials go in the token and header fields, never in the address).", true
	case duet.CodeMCPAuthIssuerMismatch:
		p.Advice = "The server now names another authorization server than the one its OAuth client was registered with; nothing was sent to it. Check with the server's owner before you register it again."
	case duet.CodeMCPToolNotFound:
		p.Advice = "Press Sync the catalog to read the server's tools again: the tool may have been renamed or removed."
	case duet.CodeNotFound:
		p.Advice = "The registration is gone (removed, perhaps in another tab): register the server again on the MCP page."
	case duet.CodeInvalidArgument:
		p.Advice, p.Replace = "Correct it under Replace the registration below.", true
	default:
		p.Advice, p.Replace = "Press Sync the catalog to try again, or change the registration under Replace the registration below.", true
	}
	if p.What == "" {
		p.What = string(p.Code)
	}
	return p
}

// registerProblem explains err, from registering a server under name on
// the MCP page, in the console's words; mine are the caller's
// registrations and key the serverKey of the address given ("" if it
// has none). The form comes back filled as the advice says: named after
// the registration to replace, with Replace ticked.
func registerProblem(err error, name, key string, mine []api.ServerView) (mcpProblem, serversData) {
	p := mcpProblem{Code: duet.ErrorCode(err), What: cliAdvice(duet.ErrorMessage(err))}
	form := serversData{Name: name}
	if p.Code == duet.CodeConflict {
		for _, s := range mine {
			switch {
			case key != "" && s.ServerKey == key && s.Name != name:
				p.What = fmt.Sprintf("You registered this address already, as %q: your cases and calls reach it by that name, so it has one registration.", s.Name)
				p.Advice = fmt.Sprintf("Use %q as it is; or, to give it new credentials, the form below now names it and has Replace my registration ticked: "+
					"enter them and press Register and sync.", s.Name)
				form.Name, form.Replace = s.Name, true
				return p, form
			case s.Name == name:
				p.What = fmt.Sprintf("You have a server named %q already, at %s.", s.Name, s.URL)
				p.Advice = fmt.Sprintf("Tick Replace my registration to point %q at this address (its credentials and archived tools are replaced), or choose another name.", s.Name)
				return p, form
			}
		}
	}
	switch p.Code {
	case duet.CodeURLRefused:
		p.Advice = "Enter an address Duet may reach. Credentials go in the token and header fields, never in the address."
	case duet.CodeInvalidArgument:
		p.Advice = "Correct the form below and press Register and sync again."
	default:
		p.Advice = "Correct the form below and press Register and sync again, or come back once the server is reachable."
	}
	if p.What == "" {
		p.What = string(p.Code)
	}
	return p, form
}
