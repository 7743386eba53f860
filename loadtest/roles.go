package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/demotools"
	"github.com/turnstream/turnstream/internal/embedded"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/worker"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// childLog is a child's logger: errors only, on stderr (the parent keeps
// the tail and shows it if the child dies); with logDirEnv set, warnings
// and errors, to a file of its own there as well.
func childLog() zerolog.Logger {
	dir := os.Getenv(logDirEnv)
	if dir == "" {
		return zerolog.New(os.Stderr).Level(zerolog.ErrorLevel).With().Timestamp().Logger()
	}
	name := filepath.Join(dir, os.Getenv(roleEnv)+"-"+strconv.Itoa(os.Getpid())+".log")
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "loadtest: %s: %v\n", logDirEnv, err)
		return zerolog.New(os.Stderr).Level(zerolog.ErrorLevel).With().Timestamp().Logger()
	}
	// The file closes with the process.
	return zerolog.New(zerolog.MultiLevelWriter(os.Stderr, f)).Level(zerolog.WarnLevel).With().Timestamp().Logger()
}

// natsMain runs the embedded nats-server, as `turnstream dev` does, until
// ctx ends.
func natsMain(ctx context.Context, c childConfig, ready func(string)) error {
	srv, err := embedded.Start(embedded.Options{StoreDir: c.StoreDir})
	if err != nil {
		return err
	}
	ready(srv.ClientURL())
	<-ctx.Done()
	srv.Shutdown()
	srv.WaitForShutdown()
	return nil
}

// workerMain runs a turnstream worker against the mock provider, built as
// `turnstream worker` builds it, with the mock's config and the child's
// concurrency and bounds.
func workerMain(ctx context.Context, c childConfig, ready func(string)) error {
	nc, err := nats.Connect(c.NATSURL, nats.Name("turnstream loadtest worker"), nats.MaxReconnects(-1))
	if err != nil {
		return err
	}
	defer nc.Close()
	cfg := config.Mock(c.MockURL)
	if c.Concurrency > 0 {
		cfg.Worker.Concurrency = c.Concurrency
	}
	if c.ContextTokens > 0 {
		for i := range cfg.Models {
			cfg.Models[i].ContextTokens = c.ContextTokens
		}
	}
	if c.TurnBound > 0 {
		cfg.Budgets.WallClock = config.Duration(c.TurnBound)
		cfg.Budgets.Ceiling.WallClock = max(cfg.Budgets.Ceiling.WallClock, cfg.Budgets.WallClock)
		for i := range cfg.Providers {
			cfg.Providers[i].IdleTimeout = config.Duration(c.TurnBound)
		}
	}
	w, err := worker.New(ctx, worker.Options{Conn: nc, Config: cfg, Log: childLog(), HTTPClient: &http.Client{}})
	if err != nil {
		return err
	}
	ready("")
	return w.Run(ctx)
}

// toolsMain serves the demo tools, as `turnstream tools` does.
func toolsMain(ctx context.Context, c childConfig, ready func(string)) error {
	nc, err := nats.Connect(c.NATSURL, nats.Name("turnstream loadtest tools"), nats.MaxReconnects(-1))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ready("")
	return toolworker.Serve(ctx, js, demotools.Handlers(), toolworker.WithIdempotent(demotools.Idempotent()...), toolworker.WithLogger(childLog()))
}

// Text turns. A prompt "lt:frames=N" gets a text answer of exactly N
// streamed chunks (data frames: the role, N-3 words, the finish and the
// usage), then [DONE]; "lt:hold:frames=N" the same, held after its first
// chunk until the mock is released (holdGate). Anything else gets
// mockllm's default answer, which calls the offered tools.
const (
	promptPrefix = "lt:"
	holdPrefix   = "lt:hold:"
	// minFrames is the role, one word, the finish and the usage.
	minFrames = 4
)

// textPrompt is the prompt of a text turn of frames chunks.
func textPrompt(frames int, hold bool) string {
	if hold {
		return holdPrefix + "frames=" + strconv.Itoa(frames)
	}
	return promptPrefix + "frames=" + strconv.Itoa(frames)
}

// parsePrompt reads a text turn's prompt.
func parsePrompt(s string) (frames int, hold, ok bool) {
	rest, ok := strings.CutPrefix(s, promptPrefix)
	if !ok {
		return 0, false, false
	}
	rest, hold = strings.CutPrefix(rest, "hold:")
	v, ok := strings.CutPrefix(rest, "frames=")
	if !ok {
		return 0, false, false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < minFrames || n > 100_000 {
		return 0, false, false
	}
	return n, hold, true
}

// answerWords are the words of the text answers, in a loop.
var answerWords = mockllm.Words("turnstream relays every chunk of the answer as it streams from the provider to each follower of the turn ")

// textAnswer is a stream of exactly frames data frames: the role, one
// word per frame, the finish and the usage.
func textAnswer(frames int) *mockllm.Stream {
	var b strings.Builder
	for i := range frames - 3 {
		b.WriteString(answerWords[i%len(answerWords)])
	}
	return mockllm.NewStream("mock-1").Text(b.String()).Finish("stop").Usage(12, frames-3)
}

// loadtestScript answers text-turn prompts with textAnswer and anything else
// as mockllm.Default does, with latency before each frame.
func loadtestScript(latency time.Duration) mockllm.Script {
	def := mockllm.Default(mockllm.DefaultOptions{Latency: latency})
	return mockllm.ScriptFunc(func(req *mockllm.Request) *mockllm.Response {
		if !req.IsResponses() && len(req.Tools) == 0 {
			if frames, _, ok := parsePrompt(req.LastMessage().Text()); ok {
				r := textAnswer(frames).Response()
				r.Latency = latency
				return r
			}
		}
		return def.Respond(req)
	})
}

// holdGate holds the answers of held turns after their first chunk until
// it is released, so that many turns are in flight at once however long
// they take to start. A held answer waits at most max.
type holdGate struct {
	max  time.Duration
	held atomic.Int64
	mu   sync.Mutex
	open chan struct{} // closed when released
}

func newHoldGate(max time.Duration) *holdGate {
	if max <= 0 {
		max = 10 * time.Minute
	}
	return &holdGate{max: max, open: make(chan struct{})}
}

func (g *holdGate) wait(ctx context.Context) {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	g.held.Add(1)
	defer g.held.Add(-1)
	t := time.NewTimer(g.max)
	defer t.Stop()
	select {
	case <-open:
	case <-ctx.Done():
	case <-t.C:
	}
}

// release lets every held answer go on, and those held later too.
func (g *holdGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

// arm makes the next held answers wait again.
func (g *holdGate) arm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
		g.open = make(chan struct{})
	default:
	}
}

// heldWriter holds an answer before its second write: the first frame
// (mockllm writes one per frame) has gone out.
type heldWriter struct {
	http.ResponseWriter
	ctx    context.Context
	gate   *holdGate
	writes int
}

func (w *heldWriter) Write(p []byte) (int, error) {
	if w.writes++; w.writes == 2 {
		w.gate.wait(w.ctx)
	}
	return w.ResponseWriter.Write(p)
}

func (w *heldWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// The mock's control endpoints, beside the provider's.
const (
	mockHeldPath    = "/loadtest/held"
	mockReleasePath = "/loadtest/release"
	mockArmPath     = "/loadtest/arm"
)

// mockHeld is what mockHeldPath answers.
type mockHeld struct {
	Held int64 `json:"held"`
}

// mockMain serves the mock provider, with loadtestScript and the hold
// gate, until ctx ends.
func mockMain(ctx context.Context, c childConfig, ready func(string)) error {
	mock := mockllm.New(loadtestScript(c.FrameLatency))
	mock.ForgetRequests()
	gate := newHoldGate(c.HoldMax)
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+mockHeldPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(mockHeld{Held: gate.held.Load()}) //nolint:errcheck // the client may be gone
	})
	mux.HandleFunc("POST "+mockReleasePath, func(http.ResponseWriter, *http.Request) { gate.release() })
	mux.HandleFunc("POST "+mockArmPath, func(http.ResponseWriter, *http.Request) { gate.arm() })
	holdMarker := []byte(`"` + holdPrefix)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			mock.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
		if err != nil {
			http.Error(w, "read body", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, holdMarker) {
			w = &heldWriter{ResponseWriter: w, ctx: r.Context(), gate: gate}
		}
		mock.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	ready("http://" + ln.Addr().String() + "/v1")
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	gate.release()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close() //nolint:errcheck // closing anyway
	}
	return nil
}

// newOpenAI is the bare client: openai-go against the mock, with retries
// off and the default transport, as the worker's adapter has them.
func newOpenAI(baseURL string) openai.Client {
	return openai.NewClient(
		option.WithBaseURL(baseURL),
		option.WithAPIKey("loadtest"),
		option.WithMaxRetries(0),
		option.WithHTTPClient(&http.Client{}),
	)
}

// chatParams asks for a streamed answer to prompt, as the worker asks.
func chatParams(prompt string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:         "mock-1",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
}

// bareCommand is one leg of the bare client: turns text turns of frames
// chunks, concurrency at a time.
type bareCommand struct {
	Frames      int `json:"frames"`
	Turns       int `json:"turns"`
	Concurrency int `json:"concurrency"`
}

// bareResult is what the bare client measured: per turn, the time from
// the request to its first chunk and to its end, in nanoseconds.
type bareResult struct {
	FirstChunkNS []int64 `json:"first_chunk_ns"`
	TotalNS      []int64 `json:"total_ns"`
	// Chunks counts the chunks received; Short the turns that got fewer
	// than they should have, or an error.
	Chunks     int    `json:"chunks"`
	Short      int    `json:"short"`
	FirstError string `json:"first_error,omitempty"`
	ElapsedNS  int64  `json:"elapsed_ns"`
}

// bareMain is the bare-client baseline: it reads bareCommands on stdin,
// one JSON line each, runs each and answers with a bareResult line.
func bareMain(ctx context.Context, c childConfig, ready func(string)) error {
	client := newOpenAI(c.MockURL)
	ready("")
	lines := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for lines.Scan() {
		var cmd bareCommand
		if err := json.Unmarshal(lines.Bytes(), &cmd); err != nil {
			return fmt.Errorf("command: %w", err)
		}
		if cmd.Turns < 1 || cmd.Turns > maxTurns || cmd.Concurrency < 1 || cmd.Frames < minFrames {
			return fmt.Errorf("command out of range: %+v", cmd)
		}
		res := runBareLeg(ctx, client, cmd)
		b, _ := json.Marshal(res)  // plain fields: cannot fail
		out.Write(append(b, '\n')) //nolint:errcheck // Flush reports it
		if err := out.Flush(); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
	return lines.Err()
}

func runBareLeg(ctx context.Context, client openai.Client, cmd bareCommand) bareResult {
	res := bareResult{FirstChunkNS: make([]int64, cmd.Turns), TotalNS: make([]int64, cmd.Turns)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	params := chatParams(textPrompt(cmd.Frames, false))
	runPool(&wg, cmd.Concurrency, cmd.Turns, func(i int) {
		if ctx.Err() != nil {
			return
		}
		tctx, cancel := context.WithTimeout(ctx, defaultTurnTimeout)
		defer cancel()
		t0 := time.Now()
		stream := client.Chat.Completions.NewStreaming(tctx, params)
		n := 0
		var first time.Duration
		for stream.Next() {
			if n == 0 {
				first = time.Since(t0)
			}
			_ = stream.Current()
			n++
		}
		err := stream.Err()
		stream.Close() //nolint:errcheck // read to the end
		total := time.Since(t0)
		mu.Lock()
		defer mu.Unlock()
		res.FirstChunkNS[i], res.TotalNS[i] = int64(first), int64(total)
		res.Chunks += n
		if err != nil || n != cmd.Frames {
			res.Short++
			if res.FirstError == "" {
				res.FirstError = fmt.Sprintf("%d of %d chunks: %v", n, cmd.Frames, err)
			}
		}
	})
	wg.Wait()
	res.ElapsedNS = int64(time.Since(start))
	return res
}

// The raw-NATS baseline's subjects and streams: a submit (core NATS), the
// chunks on a stream configured like TURN_CHUNKS and republished live as
// TURN_CHUNKS is, the frames' bytes on one configured like TURN_RAW, and
// an echo responder for the round-trip time.
const (
	rawSubmitSubject = "loadtest.rawsubmit"
	rawEchoSubject   = "loadtest.echo"
	rawChunkPrefix   = "loadtest.chunk."
	rawLivePrefix    = "loadtest.live.chunk."
	rawFramePrefix   = "loadtest.rawframe."
	rawChunkStream   = "LOADTEST_RAW_CHUNKS"
	rawFrameStream   = "LOADTEST_RAW_FRAMES"
)

// rawSubmit asks the raw pipeline for a text turn.
type rawSubmit struct {
	ID     string `json:"id"`
	Frames int    `json:"frames"`
}

// rawInFlight bounds the raw pipeline's turns at once.
const rawInFlight = 1024

// rawMain is the raw-NATS baseline: for each rawSubmit it streams the
// answer with openai-go, as the bare client does, and publishes each
// chunk's frame and normalized delta asynchronously to JetStream, as the
// worker does, then a completed marker, and waits for the turn's acks. It
// also answers rawEchoSubject, the round trip the report counts in.
func rawMain(ctx context.Context, c childConfig, ready func(string)) error {
	nc, err := nats.Connect(c.NATSURL, nats.Name("turnstream loadtest raw"))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(65536))
	if err != nil {
		return err
	}
	client := newOpenAI(c.MockURL)
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, rawInFlight)
	if _, err := nc.Subscribe(rawEchoSubject, func(m *nats.Msg) { m.Respond(m.Data) }); err != nil { //nolint:errcheck // the requester times out
		return err
	}
	_, err = nc.Subscribe(rawSubmitSubject, func(m *nats.Msg) {
		var req rawSubmit
		if json.Unmarshal(m.Data, &req) != nil || !wire.ValidToken(req.ID) || req.Frames < minFrames {
			return
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		wg.Go(func() {
			defer func() { <-slots }()
			rawTurn(ctx, js, client, req)
		})
	})
	if err != nil {
		return err
	}
	if err := nc.Flush(); err != nil {
		return err
	}
	ready("")
	<-ctx.Done()
	return nil
}

func rawTurn(ctx context.Context, js jetstream.JetStream, client openai.Client, req rawSubmit) {
	ctx, cancel := context.WithTimeout(ctx, defaultTurnTimeout)
	defer cancel()
	stream := client.Chat.Completions.NewStreaming(ctx, chatParams(textPrompt(req.Frames, false)))
	seq := 0
	var futures []jetstream.PubAckFuture
	var failed error
	publish := func(m *nats.Msg) {
		f, err := publishAsync(js, m)
		if err != nil {
			failed = firstErr(failed, err)
			return
		}
		futures = append(futures, f)
	}
	headers := func(seq int) nats.Header {
		return nats.Header{
			wire.HeaderContentType: {wire.ContentTypeJSON},
			wire.HeaderStep:        {"0"}, wire.HeaderAttempt: {"1"}, wire.HeaderSeq: {strconv.Itoa(seq)},
		}
	}
	for stream.Next() {
		seq++
		cur := stream.Current()
		publish(&nats.Msg{Subject: rawFramePrefix + req.ID, Header: headers(seq), Data: []byte(cur.RawJSON())})
		delta := &wire.Delta{}
		if len(cur.Choices) > 0 {
			delta.Text = cur.Choices[0].Delta.Content
			delta.FinishReason = cur.Choices[0].FinishReason
		}
		publish(chunkMsg(req.ID, headers(seq), &wire.Chunk{SessionID: req.ID, TurnID: "t1", Attempt: 1, Seq: seq, Provider: "mock", Model: "mock-1", Delta: delta}))
	}
	failed = firstErr(failed, stream.Err())
	stream.Close() //nolint:errcheck // read to the end
	marker := wire.MarkerCompleted
	if failed != nil {
		marker = wire.MarkerFailed
	}
	seq++
	publish(chunkMsg(req.ID, headers(seq), &wire.Chunk{SessionID: req.ID, TurnID: "t1", Attempt: 1, Seq: seq, Marker: marker}))
	for _, f := range futures {
		select {
		case <-f.Ok():
		case <-f.Err():
		case <-ctx.Done():
			return
		}
	}
}

func chunkMsg(id string, h nats.Header, c *wire.Chunk) *nats.Msg {
	data, _ := wire.JSON.Marshal(c) // a chunk encodes
	return &nats.Msg{Subject: rawChunkPrefix + id, Header: h, Data: data}
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// rawStreams creates the raw-NATS baseline's streams, configured like
// TURN_CHUNKS (republished live) and TURN_RAW.
func rawStreams(ctx context.Context, js jetstream.JetStream) error {
	for _, s := range []struct{ like, name, prefix, live string }{
		{wire.StreamChunks, rawChunkStream, rawChunkPrefix, rawLivePrefix},
		{wire.StreamRaw, rawFrameStream, rawFramePrefix, ""},
	} {
		actx, cancel := context.WithTimeout(ctx, apiTimeout)
		model, err := js.Stream(actx, s.like)
		if err != nil {
			cancel()
			return fmt.Errorf("loadtest: raw baseline: %w", err)
		}
		cfg := model.CachedInfo().Config
		cfg.Name = s.name
		cfg.Description = "turnstream loadtest raw-NATS baseline"
		cfg.Subjects = []string{s.prefix + "*"}
		cfg.RePublish = nil
		if s.live != "" {
			cfg.RePublish = &jetstream.RePublish{Source: s.prefix + "*", Destination: s.live + "{{wildcard(1)}}"}
		}
		_, err = js.CreateOrUpdateStream(actx, cfg)
		cancel()
		if err != nil {
			return fmt.Errorf("loadtest: raw baseline: stream %s: %w", s.name, err)
		}
	}
	return nil
}
