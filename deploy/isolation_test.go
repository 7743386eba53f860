package deploy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/turnstream/turnstream/internal/demotools"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestAccountsKeepRepliesApart shows that the accounts, not only the
// subject permissions, keep each role's traffic apart: with the
// subscribe permissions of client, toolworker and auditor lifted to ">",
// a connection of each, subscribed to everything while a whole turn with
// tools runs, receives only what its account imports and the replies on
// its own inbox prefix. In one shared account, a tool worker and an
// auditor subscribed to _INBOX.> received every reply of the turn: session
// log records, chunks, the turn request, tool results and the worker's
// TURN_STATE reads. An operator asks the fleet's NATS services meanwhile
// (`nats micro ls`): the tool worker's sniffer sees those requests, which
// TOOLS exports, and its peers' answers; the others see none of it.
func TestAccountsKeepRepliesApart(t *testing.T) {
	setPasswords(t)
	opts := loadConfig(t, serverConf)
	for _, u := range opts.Users {
		if u.Permissions != nil && (u.Username == "client" || u.Username == "toolworker" || u.Username == "auditor") {
			u.Permissions.Subscribe = &server.SubjectPermission{Allow: []string{">"}}
		}
	}
	srv := startServer(t, opts)
	url := srv.ClientURL()

	// What each sniffer may see: its account's imports (the requests its
	// user sends through them, and the live records), the pulled calls of
	// its tools, and its own inbox (a sniffer shares its user, so its
	// prefix, with the component). Nothing of the worker's: no session
	// log, chunk, raw frame or TURN_STATE read, no turn request, no reply
	// on _INBOX_worker or _R_.
	followed := []string{"$JS.API.DIRECT.GET.TURN_CHUNKS", "$JS.API.DIRECT.GET.TURN_MESSAGES", "$JS.API.DIRECT.GET.TURN_EVENTS",
		"$JS.API.STREAM.INFO.TURN_CHUNKS", "$JS.API.STREAM.INFO.TURN_MESSAGES", "$JS.API.STREAM.INFO.TURN_EVENTS",
		"$JS.API.STREAM.MSG.GET.TURN_CHUNKS", "$JS.API.STREAM.MSG.GET.TURN_MESSAGES", "$JS.API.STREAM.MSG.GET.TURN_EVENTS"}
	may := map[string][]string{
		"client": append([]string{"turn.live.", inbox("client") + ".", "turn.submit.", "turn.cancel."}, followed...),
		"toolworker": {inbox("toolworker") + ".", "turn.result.", "$JS.API.CONSUMER.INFO.TURN_TOOLS.", "$JS.API.CONSUMER.MSG.NEXT.TURN_TOOLS.",
			"$JS.ACK.TURN_TOOLS.", "$KV.TURN_CLAIMS.", "$JS.API.STREAM.INFO.KV_TURN_CLAIMS", "$JS.API.DIRECT.GET.KV_TURN_CLAIMS.",
			"turn.tool.get_time", "turn.tool.calculate",
			// The operator's requests to the tool workers' NATS services
			// (TOOLS exports them) and their answers, on the export's
			// reply subjects.
			"$SRV.", "turn.svc.tools.", "_R_."},
		"auditor": {"turn.live.event.", inbox("auditor") + "."},
	}
	type seen struct {
		mu       sync.Mutex
		subjects map[string]int
	}
	sniffed := map[string]*seen{}
	for user := range may {
		c := connect(t, url, user)
		s := &seen{subjects: map[string]int{}}
		sniffed[user] = s
		if _, err := c.Subscribe(">", func(m *nats.Msg) {
			s.mu.Lock()
			s.subjects[m.Subject]++
			s.mu.Unlock()
		}); err != nil {
			t.Fatal(err)
		}
		c.expectNoErrors(t)
	}

	stack(t, url)
	cc := connect(t, url, "client")
	cl, err := client.New(cc.Conn)
	if err != nil {
		t.Fatal(err)
	}
	turn, err := cl.Submit(ctxFor(t), wire.TurnRequest{
		SessionID: "sniffed", TurnID: "t1",
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "What time is it, and what is 17 * 23?"}},
		Tools: demotools.Tools(),
	})
	if err != nil {
		t.Fatalf("client: Submit() = %v", err)
	}
	// The operator asks the fleet's services while the turn runs.
	op := connect(t, url, "operator")
	for _, subject := range []string{"$SRV.PING", "$SRV.INFO", "$SRV.STATS", "turn.svc.worker.config", "turn.svc.tools.config"} {
		if names, seen := services(op, subject); len(names) == 0 {
			t.Errorf("operator: %s: %s; want answers", subject, seen)
		}
	}
	res, err := turn.Wait(ctxFor(t))
	if err != nil || res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("turn = %+v, %v; want completed", res, err)
	}
	turn.Close()

	var report []string
	for _, user := range slices.Sorted(maps.Keys(may)) {
		s := sniffed[user]
		s.mu.Lock()
		total, foreign := 0, map[string]int{}
		for subject, n := range s.subjects {
			total += n
			if !slices.ContainsFunc(may[user], func(p string) bool { return strings.HasPrefix(subject, p) }) {
				foreign[subject] += n
			}
		}
		s.mu.Unlock()
		report = append(report, fmt.Sprintf("%s: %d messages, %d foreign", user, total, len(foreign)))
		if len(foreign) > 0 {
			t.Errorf("%s, subscribed to >, received %v; want only %v", user, foreign, may[user])
		}
	}
	// The client sniffer saw the turn live, and the tool worker's the
	// operator's PING: the test would pass vacuously if the sniffers
	// received nothing at all.
	saw := func(user, subject string) int {
		s := sniffed[user]
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.subjects[subject]
	}
	if saw("client", "turn.live.event.sniffed") == 0 || saw("auditor", "turn.live.event.sniffed") == 0 {
		t.Errorf("the client and auditor sniffers did not see the turn's live events: %v", report)
	}
	if saw("toolworker", "$SRV.PING") == 0 {
		t.Errorf("the tool worker's sniffer did not see the operator's $SRV.PING: %v", report)
	}
	t.Log(strings.Join(report, "; "))
}
