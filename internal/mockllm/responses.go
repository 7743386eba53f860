package mockllm

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ResponsesItem is one input item of a received Responses request: a message
// (Role set, Type "message" or empty), a function_call or a
// function_call_output.
type ResponsesItem struct {
	Type      string           `json:"type,omitempty"`
	Role      string           `json:"role,omitempty"`
	Content   ResponsesContent `json:"content,omitempty"`
	ID        string           `json:"id,omitempty"`
	CallID    string           `json:"call_id,omitempty"`
	Name      string           `json:"name,omitempty"`
	Arguments string           `json:"arguments,omitempty"`
	Output    ResponsesContent `json:"output,omitempty"`
}

// IsMessage reports whether the item is a message of role.
func (it ResponsesItem) IsMessage(role string) bool {
	return (it.Type == "" || it.Type == "message") && it.Role == role
}

// Text returns the item's text: a message's text parts, joined, or a
// function_call_output's output.
func (it ResponsesItem) Text() string {
	if it.Type == "function_call_output" {
		return it.Output.Text()
	}
	return it.Content.Text()
}

// ResponsesContent is a message's content or a call's output: a string or a
// list of parts. A string is read as one input_text part.
type ResponsesContent []ResponsesPart

// ResponsesPart is one content part (input_text, output_text, input_image...).
type ResponsesPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
}

// UnmarshalJSON accepts a string or a list of parts.
func (c *ResponsesContent) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*c = nil
		return nil
	}
	var s string
	if json.Unmarshal(b, &s) == nil {
		*c = ResponsesContent{{Type: "input_text", Text: s}}
		return nil
	}
	var parts []ResponsesPart
	if err := json.Unmarshal(b, &parts); err != nil {
		return err
	}
	*c = parts
	return nil
}

// Text joins the text of the text parts.
func (c ResponsesContent) Text() string {
	var b strings.Builder
	for _, p := range c {
		if p.Type == "input_text" || p.Type == "output_text" || p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// IsResponses reports whether the request was sent to a Responses endpoint.
func (r *Request) IsResponses() bool { return isResponsesPath(r.Path) }

// LastInput returns the last input item of a Responses request, or a zero
// item.
func (r *Request) LastInput() ResponsesItem {
	if len(r.Input) == 0 {
		return ResponsesItem{}
	}
	return r.Input[len(r.Input)-1]
}

func isResponsesPath(path string) bool {
	return path == "/v1/responses" || path == "/responses"
}

type responsesRequestJSON struct {
	Model        string          `json:"model"`
	Instructions string          `json:"instructions"`
	Input        json.RawMessage `json:"input"`
	Tools        []struct {
		Type        string         `json:"type"`
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  map[string]any `json:"parameters"`
	} `json:"tools"`
	Stream bool `json:"stream"`
}

// parseResponsesRequest reads a Responses request body. The input may be a
// string (one user message) or a list of items; function tools are kept in
// the chat shape so scripts read tools the same way for both APIs.
func parseResponsesRequest(r *http.Request, body []byte) (*Request, error) {
	var rj responsesRequestJSON
	if err := json.Unmarshal(body, &rj); err != nil {
		return nil, err
	}
	req := &Request{
		Model: rj.Model, Instructions: rj.Instructions, Stream: rj.Stream,
		Body: body, Header: r.Header.Clone(), Path: r.URL.Path,
	}
	var s string
	switch in := bytes.TrimSpace(rj.Input); {
	case len(in) == 0 || bytes.Equal(in, []byte("null")):
	case json.Unmarshal(in, &s) == nil:
		req.Input = []ResponsesItem{{Role: "user", Content: ResponsesContent{{Type: "input_text", Text: s}}}}
	default:
		if err := json.Unmarshal(in, &req.Input); err != nil {
			return nil, err
		}
	}
	for _, t := range rj.Tools {
		if t.Type != "function" {
			continue
		}
		var tool Tool
		tool.Type = t.Type
		tool.Function.Name, tool.Function.Description, tool.Function.Parameters = t.Name, t.Description, t.Parameters
		req.Tools = append(req.Tools, tool)
	}
	return req, nil
}

// writeResponsesJSON answers a non-streaming Responses request: the body is
// the response object of the last response event among resp's frames (the
// terminal one when the stream has it), or an error object when an error
// event comes first. Latency, frame delays and Stall are waited before the
// answer; DisconnectAfter > 0 cuts the connection halfway through the body.
func writeResponsesJSON(ctx context.Context, w http.ResponseWriter, resp *Response) {
	if resp == nil {
		resp = Error(http.StatusInternalServerError, "server_error", "mockllm: script returned no response", nil)
	}
	if resp.Status != 0 && resp.Status != http.StatusOK {
		writeError(ctx, w, resp.Status, resp)
		return
	}
	if resp.NotStream {
		writeError(ctx, w, http.StatusOK, resp)
		return
	}
	if f := resp.Flood; f != nil && f.Kind == FloodBody {
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		f.writeBody(&floodWriter{ctx: ctx, w: w, flush: func() {}}, true)
		return
	}
	wait := resp.Stall
	for _, f := range resp.Frames {
		wait += resp.Latency + f.Delay
	}
	if !sleepCtx(ctx, wait) {
		return
	}
	body := responsesBody(resp.Frames)
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", "req_mock_"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if resp.DisconnectAfter > 0 {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, body[:len(body)/2]) //nolint:errcheck // the connection is cut next
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		panic(http.ErrAbortHandler)
	}
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, body) //nolint:errcheck // the client may be gone
}

// responsesBody derives a non-streamed answer from Responses stream frames.
func responsesBody(frames []Frame) string {
	body := "{}"
	for _, f := range frames {
		var ev struct {
			Type     string          `json:"type"`
			Response json.RawMessage `json:"response"`
			Code     json.RawMessage `json:"code"`
			Message  string          `json:"message"`
		}
		if json.Unmarshal([]byte(f.Data), &ev) != nil {
			continue
		}
		if ev.Type == "" {
			ev.Type = f.Event
		}
		switch {
		case ev.Type == "error":
			code := ev.Code
			if len(code) == 0 {
				code = json.RawMessage("null")
			}
			return `{"error":{"message":` + quote(ev.Message) + `,"type":"error","code":` + string(code) + `}}`
		case strings.HasPrefix(ev.Type, "response.") && len(ev.Response) > 0:
			body = string(ev.Response)
		}
	}
	return body
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
