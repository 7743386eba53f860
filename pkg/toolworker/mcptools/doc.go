// Package mcptools serves the tools of MCP (Model Context Protocol)
// servers as turnstream tools, through pkg/toolworker, with the official
// Go SDK (github.com/modelcontextprotocol/go-sdk) as the MCP client.
//
//	srv, err := mcptools.Start(ctx, []mcptools.Source{{Command: "./mcp-files", Prefix: "files_"}})
//	if err != nil {
//		return err
//	}
//	defer srv.Close()
//	opts := []toolworker.Option{toolworker.WithLogger(log)}
//	if idem := srv.Idempotent(); len(idem) > 0 {
//		opts = append(opts, toolworker.WithIdempotent(idem...))
//	}
//	return toolworker.Serve(ctx, js, srv.Handlers(), opts...)
//
// # Sources
//
// A Source is a command run as a child process speaking MCP on its stdin
// and stdout (the stdio transport), or the URL of a streamable HTTP
// endpoint. ParseSource reads the `turnstream tools --mcp` syntax
// (cmd:COMMAND [ARG...], an http(s) URL, or a {YAML mapping}), LoadConfig
// the `--mcp-config` file (servers: [{name, command, args, env, url,
// prefix}]).
//
// # Tools
//
// Start reads each server's tool list (tools/list, every page) once. Each
// tool is served under its name with the source's prefix before it; its
// description and input schema become the wire.Tool that Servers.Tools
// returns for clients to offer in a TurnRequest. A name that is not a
// turnstream tool name (1-64 characters of [A-Za-z0-9_-]; MCP also allows
// dots), that an earlier server or WithReserved took, or a tool no
// TurnRequest could carry, is refused with an error logged: a name is
// never rewritten. A tool the server hints read-only or idempotent
// (readOnlyHint, idempotentHint) is listed by Servers.Idempotent, for
// toolworker.WithIdempotent; any other is not idempotent.
//
// # Calls and results
//
// Every call goes through toolworker.Serve, so it is claimed before it
// runs and a redelivered call is answered from its claim, never sent to
// the server twice. The call's arguments (a JSON object; anything else is
// an error result) are the tools/call arguments; the call's deadline is
// the request's. The result's text blocks are joined by newlines,
// structured content follows as compact JSON unless a text block already
// holds the same JSON, other blocks (images, audio, blobs, links) are
// described in brackets, and isError becomes is_error. A protocol error
// from the server (an unknown tool, arguments the server refused) is an
// error result quoting the server's message. A content over
// WithMaxContentBytes (1 MiB) is cut with wire.TruncateContent's marker,
// and toolworker cuts it further to the NATS server's max payload. An
// answer past 16 MiB (the SDK's bound on a stdio frame or a server-sent
// event, which a URL server's JSON responses get too) fails the
// connection: the call is answered as one whose server stopped.
//
// # Restarts
//
// A server whose process exits, or whose connection fails under a call,
// is restarted: a new process, or a new session of the URL, after a
// backoff doubling from 100ms to 30s (WithRestartBackoff), reset once a
// server has run for a minute; each stop, failed start and restart is
// logged. A call in flight when its server stopped is answered at once
// with the error result ServerStoppedContent ("tool outcome unknown") and
// is not sent again, since it may have taken effect; its claim records
// that answer. An answer that cannot be read is answered
// UnreadableContent, and the server, still answering pings, is kept. A call that found the connection closing before it was
// written goes to the next session. Calls arriving while a server
// restarts wait for it within their deadline.
//
// It must not bypass toolworker (its claims are what make calls run
// once), touch NATS itself, rewrite a tool name, or log arguments,
// results or a server's error messages (they may quote arguments). The
// servers' stderr goes to WithStderr, by default nowhere.
package mcptools
