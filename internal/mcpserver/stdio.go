package mcpserver

import (
	"context"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
)

// ServeStdio serves one client over newline-delimited JSON-RPC on r and w
// (stdin and stdout) as caller until the client disconnects or ctx ends.
// Nothing but JSON-RPC is ever written to w.
func (s *Server) ServeStdio(ctx context.Context, caller duet.Caller, r io.ReadCloser, w io.WriteCloser) error {
	caller.Source = duet.SourceStdio
	ctx = duet.NewContextWithCaller(ctx, caller)
	err := s.srv.Run(ctx, &mcp.IOTransport{Reader: r, Writer: w})
	if ctx.Err() != nil {
		return nil
	}
	return err
}
