package main

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/console"
	"github.com/turnstream/turnstream/internal/stack"
	"github.com/turnstream/turnstream/pkg/wire"
)

// startStack runs the embedded stack (NATS, mock provider, worker, demo
// tools unless o.Tools says otherwise) for a test.
func startStack(t *testing.T, o stack.Options) *stack.Stack {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), cmdWait)
	defer cancel()
	if o.StoreDir == "" {
		o.StoreDir = t.TempDir()
	}
	o.Log = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	st, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatalf("stack.Start() = %v", err)
	}
	t.Cleanup(st.Close)
	return st
}

// run runs `turnstream args...` to its end and returns what it printed.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), cmdWait)
	defer cancel()
	var out bytes.Buffer
	err := dispatch(ctx, args, &out)
	return out.String(), err
}

// TestSubmitFlagsAnywhere: flags given after the prompt are flags, not
// prompt text (the turn goes to the server they name); "--" ends the
// flags, so what follows is prompt text even if it looks like one; the
// standard flag package's single-dash spelling still works.
func TestSubmitFlagsAnywhere(t *testing.T) {
	st := startStack(t, stack.Options{})
	tests := []struct {
		name string
		args []string
		said string // what the mock provider echoes: the prompt
	}{
		{"flags after the prompt", []string{"submit", "--session", "fl", "hello", "there", "--nats-url", st.NATSURL, "--turn", "fl-1"}, "hello there"},
		{"flags between prompt words", []string{"submit", "hello", "--session", "fl", "there", "--nats-url=" + st.NATSURL, "--turn", "fl-2"}, "hello there"},
		{"-- ends the flags", []string{"submit", "--session", "fl", "--nats-url", st.NATSURL, "--turn", "fl-3", "--", "--json", "-x"}, "--json -x"},
		{"single-dash long flags", []string{"submit", "-session", "fl", "-nats-url", st.NATSURL, "-turn=fl-4", "hi"}, "hi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, tt.args...)
			if err != nil {
				t.Fatalf("turnstream %q: %v\n%s", tt.args, err, out)
			}
			if want := "You said: " + tt.said + "\n"; !strings.Contains(out, want) {
				t.Errorf("turnstream %q printed\n%s\nwant the mock to echo %q", tt.args, out, tt.said)
			}
		})
	}
}

// TestSubmitJSON: --json prints the turn's result as one JSON object,
// --ndjson every update as one JSON line, its terminal event last.
func TestSubmitJSON(t *testing.T) {
	st := startStack(t, stack.Options{})
	out, err := run(t, "submit", "--session", "js", "--turn", "js-1", "hi", "--nats-url", st.NATSURL, "--demo-tools", "--json")
	if err != nil {
		t.Fatalf("submit --json: %v\n%s", err, out)
	}
	var res console.TurnResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("submit --json printed %q: %v", out, err)
	}
	if res.SessionID != "js" || res.TurnID != "js-1" || res.Outcome != wire.EventTurnCompleted || res.Terminal.Type != wire.EventTurnCompleted {
		t.Errorf("submit --json = %s/%s %s (terminal %s); want js/js-1 turn.completed", res.SessionID, res.TurnID, res.Outcome, res.Terminal.Type)
	}
	if !strings.Contains(res.Text, "calculate said \"391\"") || len(res.Messages) != 5 || res.Usage.InputTokens == 0 {
		t.Errorf("submit --json: text %q, %d messages, usage %+v; want the answer, 5 messages and the usage", res.Text, len(res.Messages), res.Usage)
	}

	out, err = run(t, "submit", "--session", "js", "--turn", "js-2", "hi", "--nats-url", st.NATSURL, "--ndjson")
	if err != nil {
		t.Fatalf("submit --ndjson: %v\n%s", err, out)
	}
	var last console.UpdateLine
	kinds := map[string]int{}
	for _, l := range lines(out) {
		var u console.UpdateLine
		if err := json.Unmarshal([]byte(l), &u); err != nil {
			t.Fatalf("submit --ndjson line %q: %v", l, err)
		}
		switch {
		case u.Chunk != nil && u.Message == nil && u.Event == nil:
			kinds["chunk"]++
		case u.Message != nil && u.Chunk == nil && u.Event == nil:
			kinds["message"]++
		case u.Event != nil && u.Chunk == nil && u.Message == nil:
			kinds["event"]++
		default:
			t.Errorf("submit --ndjson line %q: want exactly one of chunk, message and event", l)
		}
		if u.StreamSeq == 0 {
			t.Errorf("submit --ndjson line %q has no stream_seq", l)
		}
		last = u
	}
	if kinds["chunk"] == 0 || kinds["message"] != 2 || kinds["event"] == 0 {
		t.Errorf("submit --ndjson printed %v; want chunks, 2 messages and events", kinds)
	}
	if last.Event == nil || last.Event.Type != wire.EventTurnCompleted {
		t.Errorf("submit --ndjson's last line is %+v; want the turn.completed event", last)
	}
}

// TestVersion: `turnstream version` and --version print the version set
// with -ldflags "-X main.version=...", else the build info's.
func TestVersion(t *testing.T) {
	saved := version
	t.Cleanup(func() { version = saved })
	version = ""
	def := versionString()
	if def == "" {
		t.Fatal("versionString() without -X main.version is empty; want the build info's version or devel")
	}
	out, err := run(t, "version")
	if want := "turnstream " + def + " (" + runtime.Version(); err != nil || !strings.HasPrefix(out, want) {
		t.Errorf("turnstream version = %q, %v; want it to start with %q", out, err, want)
	}

	version = "v1.2.3-test"
	out, err = run(t, "version")
	if want := "turnstream v1.2.3-test (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"; err != nil || out != want {
		t.Errorf("turnstream version = %q, %v; want %q", out, err, want)
	}
	out, err = run(t, "--version")
	if err != nil || out != "turnstream v1.2.3-test\n" {
		t.Errorf("turnstream --version = %q, %v; want %q", out, err, "turnstream v1.2.3-test\n")
	}
}

// TestCompletion: `turnstream completion SHELL` prints a completion script
// for bash, zsh and fish, and the scripts' completion requests list every
// command and a command's flags.
func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{
		"bash": "__start_turnstream",
		"zsh":  "#compdef turnstream",
		"fish": "complete -c turnstream",
	} {
		out, err := run(t, "completion", shell)
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("turnstream completion %s = %v, printing %d bytes; want a script with %q", shell, err, len(out), want)
		}
	}
	out, err := run(t, "__complete", "")
	if err != nil {
		t.Fatalf("turnstream __complete: %v", err)
	}
	for _, cmd := range []string{"demo", "dev", "worker", "submit", "tap", "inspect", "cancel", "replay", "tools", "streams", "mockllm", "version"} {
		if !strings.Contains(out, "\n"+cmd+"\t") && !strings.HasPrefix(out, cmd+"\t") {
			t.Errorf("the completion of a command lacks %s:\n%s", cmd, out)
		}
	}
	out, err = run(t, "__complete", "submit", "--")
	if err != nil {
		t.Fatalf("turnstream __complete submit --: %v", err)
	}
	for _, flag := range []string{"--session", "--nats-url", "--inbox-prefix", "--json", "--ndjson", "--demo-tools"} {
		if !strings.Contains(out, flag+"\t") {
			t.Errorf("the completion of submit's flags lacks %s:\n%s", flag, out)
		}
	}
}

// TestUnknownFlag: a flag no command has is an error naming it.
func TestUnknownFlag(t *testing.T) {
	_, err := run(t, "submit", "--session", "s", "hi", "--nats-ulr", "x")
	if err == nil || !strings.Contains(err.Error(), "--nats-ulr") {
		t.Errorf("submit --nats-ulr = %v; want an unknown flag error naming it", err)
	}
}
