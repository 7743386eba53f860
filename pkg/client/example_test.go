package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Submit a turn and print its answer as it streams.
func Example() {
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	c, err := client.New(nc)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	turn, err := c.Submit(ctx, wire.TurnRequest{
		SessionID: "s1",
		Input:     []wire.InputMessage{{Role: wire.RoleUser, Content: "What time is it in Paris?"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer turn.Close()
	for {
		u, err := turn.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		switch {
		case u.Chunk != nil && u.Chunk.Delta != nil:
			fmt.Print(u.Chunk.Delta.Text)
		case u.Chunk != nil && u.Chunk.Marker == wire.MarkerRetrying:
			fmt.Println("\n(retrying)")
		case u.Message != nil && len(u.Message.ToolCalls) > 0:
			for _, call := range u.Message.ToolCalls {
				fmt.Printf("\n-> %s(%s)\n", call.Name, call.Arguments)
			}
		case u.Event != nil && u.Event.Terminal():
			fmt.Println("\n" + u.Event.Type)
		}
	}
}

func ExampleTurn_Wait() {
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	c, err := client.New(nc, client.WithCodec(wire.Msgpack))
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	turn, err := c.Submit(ctx, wire.TurnRequest{
		SessionID: "s1",
		Input:     []wire.InputMessage{{Role: wire.RoleUser, Content: "Say hello."}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer turn.Close()
	res, err := turn.Wait(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if res.Terminal.Type != wire.EventTurnCompleted {
		log.Fatalf("turn %s: %s", turn.ID(), res.Terminal.Type)
	}
	fmt.Println(res.Text)
}

// A UI that lost its connection resumes a turn it knows by id: chunks come
// again from the first one, so it can redraw the whole answer.
func ExampleClient_Follow() {
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	c, err := client.New(nc)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	turn, err := c.Follow(ctx, "s1", "t1")
	if err != nil {
		log.Fatal(err)
	}
	defer turn.Close()
	res, err := turn.Wait(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text)
}

// A UI that kept the Position of the turn it showed resumes after it on a
// new connection: only the records it has not shown come.
func ExampleClient_Resume() {
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	c, err := client.New(nc)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	shown := client.Position{Chunks: 41, Messages: 7, Events: 12} // from Turn.Position
	turn, err := c.Resume(ctx, "s1", "t1", shown)
	if err != nil {
		log.Fatal(err)
	}
	defer turn.Close()
	for {
		u, err := turn.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		if u.Chunk != nil && u.Chunk.Delta != nil {
			fmt.Print(u.Chunk.Delta.Text)
		}
	}
}

func ExampleClient_Cancel() {
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	c, err := client.New(nc)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Cancel only asks; a follower of the turn still reads to its terminal event.
	if err := c.Cancel(ctx, "s1", "t1"); err != nil {
		log.Fatal(err)
	}
}

func ExampleWithPrefix() {
	_, err := client.New(nil, client.WithPrefix("turn.*"))
	fmt.Println(errors.Is(err, client.ErrInvalidOption))
	// Output: true
}
