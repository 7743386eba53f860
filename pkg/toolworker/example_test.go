package toolworker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// A tool worker serves the tool "shout"; a turn worker dispatches one call
// to it and reads the result from the session's result subject.
func Example() {
	url, stopDeployment, err := startDeployment()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stopDeployment()

	nc, err := nats.Connect(url)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- toolworker.Serve(ctx, js, map[string]toolworker.Handler{
			"shout": func(ctx context.Context, call wire.ToolCall) (toolworker.Result, error) {
				var args struct {
					Text string `json:"text"`
				}
				if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
					return toolworker.Result{}, fmt.Errorf("invalid arguments: %w", err)
				}
				return toolworker.Result{Content: strings.ToUpper(args.Text) + "!"}, nil
			},
		}, toolworker.WithConcurrency(4))
	}()

	// What a turn worker does: dispatch the call with its token, then read
	// its result. (A worker signs the token with a key only workers hold;
	// to the tool worker it is opaque.)
	call := wire.ToolCall{
		SessionID: "s1", TurnID: "t1", Step: 1, CallID: "call_1", Name: "shout",
		Arguments: `{"text":"hello"}`, Deadline: time.Now().Add(time.Minute),
		Token: "Q2FsbC10b2tlbi1pc3N1ZWQtYnktdGhlLXdvcmtlcg",
	}
	data, err := wire.JSON.Marshal(&call)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := js.Publish(ctx, wire.Subjects{}.Tool(call.Name), data); err != nil {
		fmt.Println(err)
		return
	}
	results, err := js.OrderedConsumer(ctx, wire.StreamResults, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{wire.Subjects{}.Result(call.SessionID)},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	msg, err := results.Next(jetstream.FetchMaxWait(10 * time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	var res wire.ToolResult
	if err := wire.JSON.Unmarshal(msg.Data(), &res); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %s (is_error %v, the call's token %v)\n", res.CallID, res.Content, res.IsError, res.Token == call.Token)

	cancel()
	fmt.Println("serve:", <-served)
	// Output:
	// call_1: HELLO! (is_error false, the call's token true)
	// serve: <nil>
}
