// Package client is the Go client of turnstream: it submits a turn, follows
// its chunks, finalized messages and audit events until the terminal event,
// resumes following a turn mid-way (or after it ended), and cancels a turn,
// running or not yet run.
//
// A Client publishes TurnRequests on the submit subject with JetStream
// (deduplicated by turn id) and Cancels with core NATS requests, answered
// by the workers once the cancel is stored. A Turn merges the
// turn's records of TURN_CHUNKS, TURN_MESSAGES and TURN_EVENTS in arrival
// order, keeping only those of its turn; it ends after the terminal event
// and every chunk and message stored before it.
//
// # Following a turn
//
// A Turn reads only records the streams stored, and holds no consumer on
// the server (it makes no $JS.API.CONSUMER requests), so followers cost the
// servers nothing but their subscriptions. The three streams republish every
// record they store on <prefix>.live.chunk.<session>.<turn>,
// <prefix>.live.message.<session> and <prefix>.live.event.<session>, with
// headers Nats-Sequence (the record's stream sequence) and
// Nats-Last-Sequence (that of the previous record stored on the same
// subject). A Turn:
//
//   - subscribes to the three live subjects (core NATS) first, then reads
//     what is already stored after its starting Position with batch direct
//     gets, up to the last stored record, taking live records meanwhile
//     only once it has caught up, and each record once (by sequence);
//   - takes a live record when its Nats-Last-Sequence is the last record it
//     took of that subject; otherwise records were missed (republished
//     messages are not acknowledged: a slow consumer, a reconnect or a
//     leader change loses them), and it reads the subject by direct get
//     from its last record, this one included;
//   - when no live record came for a while (1s, doubling up to 8s while
//     nothing is found) before its turn ended, reads each subject's tail
//     with one direct get, since a lost record with nothing after it
//     reveals no gap;
//   - on its terminal event, asks the stream leaders for the last chunk and
//     message stored (a direct get may be served by a replica that lags the
//     leader) and reads up to them before delivering it.
//
// A write the stream refused (a stale worker's fenced append) is never
// stored, so no follower sees it. Memory is bounded: at most 512 live
// records (8 MiB) wait for Next; a live record beyond that is dropped, and
// its subject read again by direct get from the last record taken, so an
// overflow costs reads, never memory. A direct get returns at most 256
// records (2 MiB, or one larger record). Submit, Follow and Resume position a
// Turn (Resume after a Position a reconnecting UI kept), and the same
// reads catch it up.
//
// # Tapping audit events
//
// A Tap (Client.Tap) follows the SessionEvents of every session, or of one,
// in TURN_EVENTS order, as an auditor's `turnstream tap` does, and never
// ends. It holds no consumer either: its subscription to
// <prefix>.live.event.* (or .live.event.<session>) is only a doorbell, and
// it reads the events with batch direct gets filtered by <prefix>.event.*
// (or .event.<session>, never the lease fence markers on
// <prefix>.event.=fence.<session>), from the last event it took, so a lost
// live record delays an event until the next doorbell or the next tail read
// (after 2s without a live record, doubling up to 5s) and never loses it.
// It starts after a sequence (TapOptions.After, 0 for the first event
// stored) or after the stream's last event (TapOptions.New).
//
// Every reply the client receives (stream info, direct gets, the leader
// check, publish acks) comes on the connection's inbox prefix, so a
// connection made with nats.CustomInboxPrefix("_INBOX_<user>") works for a
// user whose permissions allow only that prefix.
//
// # Attempts
//
// A provider attempt's chunks end with a marker chunk (wire.Chunk.Marker):
// completed, retrying or failed. Only a completed attempt counts: a UI drops
// the partial text it showed of an attempt whose marker is retrying or
// failed (the next attempt, if any, starts over). The client delivers every
// chunk and enforces nothing.
//
// The package only reads records and publishes requests and cancels: it
// never writes chunks, messages or events, never creates streams (workers
// own the topology) and carries no credentials in requests.
package client
