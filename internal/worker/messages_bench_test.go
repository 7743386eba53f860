package worker_test

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/pkg/wire"
)

// BenchmarkTurnMessages counts the messages that pass through the server
// per text turn of a new session (what a spy subscribed to everything
// sees: requests, replies, publishes, republished live records and the
// lease watch's deliveries), by kind, with -v.
//
//	go test ./internal/worker -run '^$' -bench TurnMessages -benchtime 50x -v
func BenchmarkTurnMessages(b *testing.B) {
	e := newEnv(b, mockllm.Default(mockllm.DefaultOptions{}))
	e.startWorker()
	ctx := ctxFor(b)
	spy := e.srv.Connect()
	var mu sync.Mutex
	counts := map[string]int{}
	bytes := 0
	if _, err := spy.Subscribe(">", func(m *nats.Msg) {
		k := kindOf(m.Subject)
		mu.Lock()
		counts[k]++
		bytes += len(m.Data) + len(m.Subject)
		mu.Unlock()
	}); err != nil {
		b.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		b.Fatal(err)
	}
	events := make(chan *nats.Msg, 256)
	sub, err := e.nc.ChanSubscribe("turn.live.event.>", events)
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Unsubscribe() //nolint:errcheck // closes with the test
	n := 0
	for i := 0; b.Loop(); i++ {
		s := fmt.Sprintf("m%d", i)
		req := fmt.Sprintf(`{"session_id":%q,"turn_id":"t1","input":[{"role":"user","content":"hello"}]}`, s)
		if _, err := e.js.Publish(ctx, "turn.submit."+s, []byte(req)); err != nil {
			b.Fatal(err)
		}
		for done := false; !done; {
			select {
			case m := <-events:
				var ev wire.SessionEvent
				done = wire.JSON.Unmarshal(m.Data, &ev) == nil && ev.SessionID == s && ev.Terminal()
			case <-ctx.Done():
				b.Fatal("no terminal event")
			}
		}
		n++
	}
	spy.Flush() //nolint:errcheck
	mu.Lock()
	defer mu.Unlock()
	keys := make([]string, 0, len(counts))
	total := 0
	for k, c := range counts {
		keys = append(keys, k)
		total += c
	}
	sort.Slice(keys, func(i, j int) bool { return counts[keys[i]] > counts[keys[j]] })
	for _, k := range keys {
		b.Logf("%6.1f  %s", float64(counts[k])/float64(n), k)
	}
	b.ReportMetric(float64(total)/float64(n), "msgs/turn")
	b.ReportMetric(float64(bytes)/float64(n), "bytes/turn")
}

// kindOf names a subject's kind: its first tokens, without session and
// turn names or inbox tokens.
func kindOf(subject string) string {
	t := strings.Split(subject, ".")
	switch {
	case strings.HasPrefix(subject, "_INBOX."):
		return "_INBOX (replies)"
	case strings.HasPrefix(subject, "$JS.ACK."):
		return "$JS.ACK." + t[2]
	case strings.HasPrefix(subject, "$JS.API.DIRECT.GET."):
		return strings.Join(t[:5], ".")
	case strings.HasPrefix(subject, "$JS.API."):
		return strings.Join(t[:min(len(t), 4)], ".")
	case strings.HasPrefix(subject, "$KV."):
		return strings.Join(t[:2], ".") + " " + t[len(t)-1]
	case strings.HasPrefix(subject, "$JS."):
		return strings.Join(t[:2], ".")
	case len(t) > 3 && t[2] == "=fence":
		return strings.Join(t[:3], ".")
	}
	return strings.Join(t[:min(len(t), 2)], ".")
}
