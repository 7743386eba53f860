// Package client is the Go client of turnstream: it submits a turn, follows
// its chunks, finalized messages and audit events until the terminal event,
// resumes following a turn mid-way (or after it ended), and cancels a
// running turn.
//
// A Client publishes TurnRequests on the submit subject with JetStream
// (deduplicated by turn id) and Cancels with core NATS. A Turn reads the
// TURN_CHUNKS, TURN_MESSAGES and TURN_EVENTS streams through ordered
// consumers and merges them in arrival order, keeping only the records of
// its turn; it ends after the terminal event and every chunk and message
// stored before it.
//
// The package only reads records and publishes requests and cancels: it
// never writes chunks, messages or events, never creates streams (workers
// own the topology) and carries no credentials in requests.
package client
