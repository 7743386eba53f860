package mockllm

import (
	"context"
	"io"
	"strconv"
	"strings"
)

// FloodKind is a hostile behaviour of a provider.
type FloodKind string

// Flood kinds.
const (
	// FloodLine writes "data: " and then Bytes of text without a newline.
	FloodLine FloodKind = "line"
	// FloodDataLines writes "data: " lines of Piece bytes, Bytes in all,
	// never a blank line: one event that never ends.
	FloodDataLines FloodKind = "data_lines"
	// FloodText streams Bytes of visible text in deltas of Piece bytes,
	// then a stop.
	FloodText FloodKind = "text"
	// FloodReasoning streams Bytes of reasoning in deltas of Piece bytes,
	// then the text "ok" and a stop.
	FloodReasoning FloodKind = "reasoning"
	// FloodFrame sends one event whose text delta is Bytes long, then a
	// stop.
	FloodFrame FloodKind = "frame"
	// FloodArguments streams one tool call whose arguments are Bytes long
	// (one JSON object with one string), in fragments of Piece bytes, then
	// a tool_calls finish.
	FloodArguments FloodKind = "arguments"
	// FloodToolCalls streams Count tool calls, then a tool_calls finish.
	FloodToolCalls FloodKind = "tool_calls"
	// FloodBody is the body of a Response whose Status is not 200, or that
	// is NotStream, or that answers a non-streaming Responses request:
	// Bytes of text in an error object, or in the response's message for
	// a non-streamed Responses answer with status 200.
	FloodBody FloodKind = "body"
)

// Flood is hostile output the server generates as it writes it, so that
// a flood of any size costs the server no memory. It is written after the
// Response's Frames and before its "[DONE]" (FloodBody replaces the body),
// in the shape of the request's API: Chat Completions chunks, Responses
// events (the stream then ends with response.completed), or Messages
// events (ending with message_stop). Every loop is bounded by Bytes or
// Count, and the server stops writing at the first failed write or as
// soon as the client is gone.
type Flood struct {
	Kind FloodKind
	// Bytes is the flood's size: the line, the data lines, the text, the
	// reasoning, the frame's text, the arguments or the body's text.
	Bytes int64
	// Count is the number of tool calls of FloodToolCalls.
	Count int
	// Piece is the size of each line, delta or fragment. Default 1024.
	Piece int
}

func (f *Flood) piece() int64 {
	if f.Piece <= 0 {
		return 1024
	}
	return int64(f.Piece)
}

// floodWriter writes a flood until it is done, a write fails or ctx ends.
type floodWriter struct {
	ctx   context.Context
	w     io.Writer
	flush func()
	err   error
}

var filler = strings.Repeat("x", 32<<10)

func (fw *floodWriter) str(s string) bool {
	if fw.err == nil {
		if fw.err = fw.ctx.Err(); fw.err == nil {
			_, fw.err = io.WriteString(fw.w, s)
		}
	}
	return fw.err == nil
}

// fill writes n bytes of 'x'.
func (fw *floodWriter) fill(n int64) bool {
	for n > 0 && fw.err == nil {
		k := min(n, int64(len(filler)))
		fw.str(filler[:k])
		n -= k
	}
	return fw.err == nil
}

// event writes one SSE event: "event: name" when name is set, then the
// data prefix, n bytes of 'x' and the data suffix.
func (fw *floodWriter) event(name, prefix string, n int64, suffix string) bool {
	if name != "" {
		fw.str("event: " + name + "\n")
	}
	ok := fw.str("data: "+prefix) && fw.fill(n) && fw.str(suffix+"\n\n")
	if ok {
		fw.flush()
	}
	return ok
}

// write writes the stream flood f in dialect d. It reports whether the
// stream may go on.
func (f *Flood) write(fw *floodWriter, d floodDialect) bool {
	piece := f.piece()
	pieces := func(total int64, each func(n int64) bool) bool {
		for left := total; left > 0; left -= piece {
			if !each(min(piece, left)) {
				return false
			}
		}
		return true
	}
	switch f.Kind {
	case FloodLine:
		return fw.str("data: ") && fw.fill(f.Bytes)
	case FloodDataLines:
		return pieces(f.Bytes, func(n int64) bool { return fw.str("data: ") && fw.fill(n) && fw.str("\n") })
	case FloodText, FloodFrame:
		if f.Kind == FloodFrame {
			piece = max(f.Bytes, 1)
		}
		return d.textStart(fw) && pieces(f.Bytes, func(n int64) bool { return d.text(fw, n) }) && d.stop(fw)
	case FloodReasoning:
		return d.reasoningStart(fw) && pieces(f.Bytes, func(n int64) bool { return d.reasoning(fw, n) }) &&
			d.textStart(fw) && fw.event(d.textEvent, d.textPrefix, 0, `ok`+d.textSuffix) && d.stop(fw)
	case FloodArguments:
		return d.call(fw, 0, `{\"a\":\"`) && pieces(max(f.Bytes-8, 0), func(n int64) bool { return d.args(fw, 0, n) }) &&
			fw.event(d.argsEvent, d.argsPrefix(0), 0, `\"}`+d.argsSuffix) && d.callDone(fw, 0) && d.toolStop(fw)
	case FloodToolCalls:
		for i := range f.Count {
			if !d.call(fw, i, `{}`) || !d.callDone(fw, i) {
				return false
			}
		}
		return d.toolStop(fw)
	}
	return true
}

// floodDialectOf is the flood dialect of req's API.
func floodDialectOf(req *Request) floodDialect {
	switch {
	case req.IsResponses():
		return responsesFlood
	case req.IsMessages():
		return messagesFlood
	}
	return chatFlood
}

// floodDialect writes a flood's frames in one API's shape. Text goes in
// the data between a prefix and a suffix, as 'x' needs no escaping.
type floodDialect struct {
	textEvent, textPrefix, textSuffix string
	reasonEvent, reasonPrefix         string
	reasonSuffix                      string
	argsEvent                         string
	argsPrefix                        func(i int) string
	argsSuffix                        string
	textStart, reasoningStart, stop   func(fw *floodWriter) bool
	toolStop                          func(fw *floodWriter) bool
	call                              func(fw *floodWriter, i int, args string) bool
	callDone                          func(fw *floodWriter, i int) bool
}

func (d floodDialect) text(fw *floodWriter, n int64) bool {
	return fw.event(d.textEvent, d.textPrefix, n, d.textSuffix)
}

func (d floodDialect) reasoning(fw *floodWriter, n int64) bool {
	return fw.event(d.reasonEvent, d.reasonPrefix, n, d.reasonSuffix)
}

func (d floodDialect) args(fw *floodWriter, i int, n int64) bool {
	return fw.event(d.argsEvent, d.argsPrefix(i), n, d.argsSuffix)
}

const chatChunk = `{"id":"chatcmpl-mock","object":"chat.completion.chunk","created":1767225600,"model":"mock-1","choices":[{"index":0,"delta":`

var chatFlood = floodDialect{
	textPrefix:   chatChunk + `{"content":"`,
	textSuffix:   `"},"finish_reason":null}]}`,
	reasonPrefix: chatChunk + `{"reasoning_content":"`,
	reasonSuffix: `"},"finish_reason":null}]}`,
	argsPrefix: func(i int) string {
		return chatChunk + `{"tool_calls":[{"index":` + strconv.Itoa(i) + `,"function":{"arguments":"`
	},
	argsSuffix:     `"}}]},"finish_reason":null}]}`,
	textStart:      func(*floodWriter) bool { return true },
	reasoningStart: func(*floodWriter) bool { return true },
	stop: func(fw *floodWriter) bool {
		return fw.event("", chatChunk+`{},"finish_reason":"stop"}]}`, 0, "")
	},
	toolStop: func(fw *floodWriter) bool {
		return fw.event("", chatChunk+`{},"finish_reason":"tool_calls"}]}`, 0, "")
	},
	call: func(fw *floodWriter, i int, args string) bool {
		n := strconv.Itoa(i)
		return fw.event("", chatChunk+`{"tool_calls":[{"index":`+n+`,"id":"call_`+n+`","type":"function","function":{"name":"tool","arguments":"`+args+`"}}]},"finish_reason":null}]}`, 0, "")
	},
	callDone: func(*floodWriter, int) bool { return true },
}

var responsesFlood = floodDialect{
	textEvent:    "response.output_text.delta",
	textPrefix:   `{"type":"response.output_text.delta","item_id":"msg_flood","output_index":0,"content_index":0,"delta":"`,
	textSuffix:   `"}`,
	reasonEvent:  "response.reasoning_summary_text.delta",
	reasonPrefix: `{"type":"response.reasoning_summary_text.delta","item_id":"rs_flood","output_index":1,"summary_index":0,"delta":"`,
	reasonSuffix: `"}`,
	argsEvent:    "response.function_call_arguments.delta",
	argsPrefix: func(i int) string {
		return `{"type":"response.function_call_arguments.delta","item_id":"fc_flood_` + strconv.Itoa(i) + `","output_index":` + strconv.Itoa(i+2) + `,"delta":"`
	},
	argsSuffix: `"}`,
	textStart: func(fw *floodWriter) bool {
		return fw.event("response.output_item.added", `{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_flood","type":"message","role":"assistant","content":[]}}`, 0, "")
	},
	reasoningStart: func(fw *floodWriter) bool {
		return fw.event("response.output_item.added", `{"type":"response.output_item.added","output_index":1,"item":{"id":"rs_flood","type":"reasoning","summary":[]}}`, 0, "")
	},
	stop:     responsesCompleted,
	toolStop: responsesCompleted,
	call: func(fw *floodWriter, i int, args string) bool {
		n, idx := strconv.Itoa(i), strconv.Itoa(i+2)
		return fw.event("response.output_item.added", `{"type":"response.output_item.added","output_index":`+idx+
			`,"item":{"id":"fc_flood_`+n+`","type":"function_call","status":"in_progress","call_id":"call_`+n+`","name":"tool","arguments":""}}`, 0, "") &&
			fw.event("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","item_id":"fc_flood_`+n+
				`","output_index":`+idx+`,"delta":"`+args+`"}`, 0, "")
	},
	callDone: func(fw *floodWriter, i int) bool {
		n, idx := strconv.Itoa(i), strconv.Itoa(i+2)
		return fw.event("response.output_item.done", `{"type":"response.output_item.done","output_index":`+idx+
			`,"item":{"id":"fc_flood_`+n+`","type":"function_call","status":"completed","call_id":"call_`+n+`","name":"tool","arguments":""}}`, 0, "")
	},
}

// messagesFlood writes Anthropic Messages events: text in block 0,
// thinking in block 1, tool call i in block i+2.
var messagesFlood = floodDialect{
	textEvent:    "content_block_delta",
	textPrefix:   `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`,
	textSuffix:   `"}}`,
	reasonEvent:  "content_block_delta",
	reasonPrefix: `{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"`,
	reasonSuffix: `"}}`,
	argsEvent:    "content_block_delta",
	argsPrefix: func(i int) string {
		return `{"type":"content_block_delta","index":` + strconv.Itoa(i+2) + `,"delta":{"type":"input_json_delta","partial_json":"`
	},
	argsSuffix: `"}}`,
	textStart: func(fw *floodWriter) bool {
		return fw.event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`, 0, "")
	},
	reasoningStart: func(fw *floodWriter) bool {
		return fw.event("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":""}}`, 0, "")
	},
	stop:     func(fw *floodWriter) bool { return messagesStop(fw, "end_turn") },
	toolStop: func(fw *floodWriter) bool { return messagesStop(fw, "tool_use") },
	call: func(fw *floodWriter, i int, args string) bool {
		n, idx := strconv.Itoa(i), strconv.Itoa(i+2)
		return fw.event("content_block_start", `{"type":"content_block_start","index":`+idx+
			`,"content_block":{"type":"tool_use","id":"toolu_`+n+`","name":"tool","input":{}}}`, 0, "") &&
			fw.event("content_block_delta", `{"type":"content_block_delta","index":`+idx+`,"delta":{"type":"input_json_delta","partial_json":"`+args+`"}}`, 0, "")
	},
	callDone: func(fw *floodWriter, i int) bool {
		return fw.event("content_block_stop", `{"type":"content_block_stop","index":`+strconv.Itoa(i+2)+`}`, 0, "")
	},
}

func messagesStop(fw *floodWriter, reason string) bool {
	return fw.event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+reason+`","stop_sequence":null},"usage":{"output_tokens":1}}`, 0, "") &&
		fw.event("message_stop", `{"type":"message_stop"}`, 0, "")
}

func responsesCompleted(fw *floodWriter) bool {
	return fw.event("response.completed", `{"type":"response.completed","response":{"id":"resp_flood","object":"response","status":"completed","output":[]}}`, 0, "")
}

// writeBody writes a FloodBody: Bytes of text in an error object, or, for
// a non-streamed Responses answer with status 200, in its message.
func (f *Flood) writeBody(fw *floodWriter, responseOK bool) {
	if responseOK {
		fw.str(`{"id":"resp_flood","object":"response","status":"completed","output":[{"type":"message","id":"msg_flood","role":"assistant","content":[{"type":"output_text","text":"`)
		fw.fill(f.Bytes)
		fw.str(`"}]}]}`)
		return
	}
	fw.str(`{"error":{"message":"`)
	fw.fill(f.Bytes)
	fw.str(`","type":"server_error","code":"server_error"}}`)
}
