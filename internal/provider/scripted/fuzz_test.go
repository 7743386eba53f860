package scripted_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/scripted"
	"github.com/turnstream/turnstream/pkg/wire"
)

// FuzzReplay replays arbitrary recorded frames (one per line; a line
// "@name data" carries an SSE event name) under each kind of recorded
// outcome. The replay never panics, relays the recorded frames in order,
// fails with a *provider.Failure, and returns a response only for a
// completed recording whose frames reached the terminal marker.
func FuzzReplay(f *testing.F) {
	text := mockllm.NewStream("m").Text("hi there").Finish("stop").Usage(1, 2).Frames()
	tools := mockllm.NewStream("m").ToolCalls(3, mockllm.Call{ID: "a", Name: "f", Arguments: `{"x":1}`}).Finish("tool_calls").Frames()
	for outcome := range byte(4) {
		f.Add(strings.Join(dataOf(text, true), "\n"), outcome)
		f.Add(strings.Join(dataOf(tools, true), "\n"), outcome)
		f.Add(strings.Join(dataOf(tools[:len(tools)-2], true), "\n"), outcome)
	}
	f.Add("@error {}\n[DONE]", byte(0))
	f.Add(`{"error":{"message":"x"}}`, byte(2))
	f.Add("{\n[DONE]", byte(1))
	f.Fuzz(func(t *testing.T, frames string, outcome byte) {
		var rec recording
		for i, line := range strings.Split(frames, "\n") {
			f := wire.RawFrame{SessionID: session, TurnID: turnID, Step: 1, Attempt: 1, Seq: i + 1,
				Provider: targetA.Provider, Model: targetA.Model, Bytes: []byte(line)}
			if name, data, ok := strings.Cut(line, " "); ok && strings.HasPrefix(name, "@") {
				f.Event, f.Bytes = name[1:], []byte(data)
			}
			rec.frames = append(rec.frames, f)
			rec.chunks = append(rec.chunks, wire.Chunk{SessionID: session, TurnID: turnID, Step: 1, Attempt: 1, Seq: i + 1,
				Provider: targetA.Provider, Model: targetA.Model, Event: f.Event})
		}
		var overrides []scripted.Override
		var want provider.Class
		end := wire.Chunk{SessionID: session, TurnID: turnID, Step: 1, Attempt: 1, Seq: len(rec.frames) + 1, Provider: targetA.Provider, Model: targetA.Model}
		switch outcome % 4 {
		case 0:
			end.Marker = wire.MarkerCompleted
		case 1:
			end.Marker, end.Failure, want = wire.MarkerRetrying, string(provider.ClassServer), provider.ClassServer
		case 2:
			end.Marker, end.Failure, want = wire.MarkerFailed, string(provider.ClassMalformed), provider.ClassMalformed
		case 3:
			overrides = append(overrides, scripted.Override{Step: 1, Attempt: 1, Outcome: scripted.Fail(provider.ClassTransport)})
			want = provider.ClassTransport
		}
		if end.Marker != "" {
			rec.chunks = append(rec.chunks, end)
		}
		s, err := scripted.Derive(rec.frames, rec.chunks, overrides...)
		if err != nil {
			t.Fatalf("Derive() error = %v", err)
		}
		checkReplay(t, s, want)
	})
}

// FuzzDerive derives scripts from arbitrary records: 4 bytes a record
// (step, attempt, seq, kind: a raw frame, a frame's chunk with a delta, or
// an end marker). Derive never panics; what it accepts has one call per
// attempt, in order, numbered from 1 in each step, holding every raw frame
// and every delta; and every call replays without panic.
func FuzzDerive(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 0, 0, 2, 2})
	f.Add([]byte{0, 0, 1, 3, 0, 1, 1, 0, 0, 1, 2, 2, 1, 0, 1, 4})
	f.Add([]byte{0, 0, 1, 0, 0, 0, 1, 2})
	f.Add([]byte{0, 1, 1, 2})
	f.Add([]byte{0, 0, 1, 0, 0, 0, 1, 6, 0, 0, 2, 1, 0, 0, 3, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		var rec recording
		deltas := 0
		for i := 0; i+4 <= len(data) && len(rec.frames)+len(rec.chunks) < 64; i += 4 {
			step, att, seq, kind := int(data[i]%3)+1, int(data[i+1]%4)+1, int(data[i+2]%6), data[i+3]
			target := targetA
			if kind&0x80 != 0 {
				target = targetB
			}
			fr := wire.RawFrame{SessionID: session, TurnID: turnID, Step: step, Attempt: att, Seq: seq, Provider: target.Provider, Model: target.Model}
			c := wire.Chunk{SessionID: session, TurnID: turnID, Step: step, Attempt: att, Seq: seq, Provider: target.Provider, Model: target.Model}
			switch kind % 7 {
			case 0:
				fr.Bytes = []byte(`{"choices":[{"index":0,"delta":{"content":"x"}}]}`)
			case 1:
				fr.Bytes = []byte("[DONE]")
			case 2:
				c.Marker = wire.MarkerCompleted
			case 3:
				c.Marker, c.Failure = wire.MarkerRetrying, string(provider.ClassServer)
			case 4:
				c.Marker, c.Failure = wire.MarkerFailed, string(provider.ClassRateLimit)
			case 5:
				c.Marker = "bogus"
			case 6:
				c.Delta = &wire.Delta{Text: "x"}
				deltas++
			}
			if fr.Bytes != nil {
				rec.frames = append(rec.frames, fr)
			} else {
				rec.chunks = append(rec.chunks, c)
			}
		}
		s, err := scripted.Derive(rec.frames, rec.chunks)
		if err != nil {
			if !errors.Is(err, scripted.ErrNoMarker) && !errors.Is(err, scripted.ErrInconsistent) {
				t.Fatalf("Derive() error = %v; want ErrNoMarker or ErrInconsistent", err)
			}
			return
		}
		frames, markers, withDelta := 0, 0, 0
		for i, c := range s.Calls {
			frames += len(c.Frames)
			markers++ // every accepted attempt has its marker
			for _, f := range c.Frames {
				if f.Delta != nil {
					withDelta++
				}
			}
			wantAttempt := 1
			if i > 0 && s.Calls[i-1].Step == c.Step {
				wantAttempt = s.Calls[i-1].Attempt + 1
			}
			if i > 0 && s.Calls[i-1].Step > c.Step || c.Attempt != wantAttempt || c.Marker == "" {
				t.Fatalf("Derive() call %d = step %d attempt %d marker %q; want ordered, attempt %d, marked", i, c.Step, c.Attempt, c.Marker, wantAttempt)
			}
		}
		if frames != len(rec.frames) || markers+deltas != len(rec.chunks) || withDelta != deltas {
			t.Fatalf("Derive() holds %d frames, %d markers, %d deltas; want all %d frames and %d chunks (%d deltas)",
				frames, markers, withDelta, len(rec.frames), len(rec.chunks), deltas)
		}
		for _, c := range s.Calls {
			one := &scripted.Script{Calls: []scripted.Call{c}}
			checkReplay(t, one, c.Outcome.Class)
		}
	})
}

// checkReplay replays s's single call and checks the replay invariants;
// class is the recorded failure class, "" for a completed recording.
func checkReplay(t *testing.T, s *scripted.Script, class provider.Class) {
	t.Helper()
	c := s.Calls[0]
	a, err := scripted.New(s)
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	body, err := a.Prepare(&provider.Request{}, provider.Model{Name: c.Target.Model})
	if err != nil {
		t.Fatalf("Prepare() error = %v", err)
	}
	var relayed []provider.Frame
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	resp, err := a.Stream(ctx, body, func(f provider.Frame) error { relayed = append(relayed, f); return nil })
	if (resp == nil) == (err == nil) {
		t.Fatalf("Stream() = %v, %v; want exactly one of response and error", resp, err)
	}
	for i, f := range relayed {
		if !bytes.Equal(f.Raw, c.Frames[i].Raw) || f.Event != c.Frames[i].Event {
			t.Fatalf("Stream() relayed frame %d = %q; want the recorded %q", i, f.Raw, c.Frames[i].Raw)
		}
	}
	if err != nil {
		var f *provider.Failure
		if !errors.As(err, &f) {
			t.Fatalf("Stream() error = %T %v; want *provider.Failure", err, err)
		}
		if class != "" && !errors.Is(err, scripted.ErrDiverged) && f.Class != class {
			t.Fatalf("Stream() error = %v; want the recorded %s", err, class)
		}
		return
	}
	if class != "" {
		t.Fatalf("Stream() = %+v; want the recorded failure %s", resp, class)
	}
	if !resp.Terminal || len(relayed) != len(c.Frames) {
		t.Fatalf("Stream() = %+v after %d of %d frames; want a terminal response after all", resp, len(relayed), len(c.Frames))
	}
	done := false
	for _, fr := range c.Frames {
		done = done || bytes.Equal(bytes.TrimSpace(fr.Raw), []byte("[DONE]"))
	}
	if !done {
		t.Fatalf("Stream() completed without a [DONE] frame: nothing may be executable from an unfinished stream")
	}
}
