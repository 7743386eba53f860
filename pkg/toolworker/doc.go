// Package toolworker is the SDK with which a tool author serves named tools
// from any process: Serve binds one durable pull consumer per tool on the
// TURN_TOOLS work queue, runs the author's Handler for each call within the
// call's deadline, publishes its ToolResult on the session's result subject
// in the call's encoding, and only then acks. A result carries the Nats-Msg-Id
// "result:<session>:<turn>:<call_id>", so a redelivered call cannot store a
// second result within the stream's duplicate window.
//
// It owns the tool side of the wire contract: decoding and validating calls,
// heartbeating long runs, bounding concurrency, recovering panics and
// draining in-flight calls on shutdown. It must not create or change streams
// (the turnstream workers own the topology; Serve waits for it), must not
// write anything but results, and must never log tool arguments or results.
package toolworker
