// submit.mjs: submit a turn to turnstream and follow it to its end.
//
//   node submit.mjs --session S [--turn T] [--tools FILE] [--timeout 120] prompt...
//
// It follows the turn under turnstream's follow contract (README:
// "Following a turn") and creates no consumer: it subscribes to the
// streams' live subjects, where they republish every record they store
// with its stream sequence, and reads what it missed with direct gets. It
// needs only these permissions: publish turn.submit.>,
// $JS.API.STREAM.INFO.<stream>, $JS.API.DIRECT.GET.<stream> and
// $JS.API.STREAM.MSG.GET.<stream> for TURN_CHUNKS, TURN_MESSAGES and
// TURN_EVENTS; subscribe turn.live.> and its inbox prefix.
//
// It prints the answer as it streams, the tool calls and results, and the
// terminal event, and exits 0 when the turn completed, 1 when it failed, was
// rejected, or did not end within --timeout seconds.

import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { headers } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connectNATS, fail, parse, prefixOf, seconds, subjects, validToken, withTimeout } from "./connect.mjs";

const usage = `usage: node submit.mjs --session S [--turn T] [--tools FILE] [--timeout SECONDS] [connection flags] prompt...

  --session S       session id (required): 1-128 characters of [A-Za-z0-9_-]
  --turn T          turn id (default: a random one)
  --tools FILE      JSON file with an array of tools to offer ({name, description, parameters})
  --timeout S       give up when the turn has not ended after S seconds (default 120)
  connection flags: --nats-url, --user, --password, --inbox-prefix, --prefix (see connect.mjs)`;

const { values, positionals } = parse(
  { session: { type: "string" }, turn: { type: "string" }, tools: { type: "string" }, timeout: { type: "string", default: "120" } },
  usage,
);
const session = values.session;
const turn = values.turn ?? randomUUID();
const prompt = positionals.join(" ").trim();
if (!validToken(session) || !validToken(turn) || prompt === "") {
  console.error(usage);
  fail("--session (and --turn, if given) must be 1-128 characters of [A-Za-z0-9_-], and a prompt is required");
}
setTimeout(() => fail(`the turn did not end within ${values.timeout}s`), seconds(values, "timeout"));

const request = { session_id: session, turn_id: turn, input: [{ role: "user", content: prompt }] };
if (values.tools) {
  try {
    request.tools = JSON.parse(readFileSync(values.tools, "utf8"));
  } catch (err) {
    fail(`--tools ${values.tools}: ${err.message}`);
  }
}

// Bounds of the follower: live records waiting to be handled (beyond them
// a record is dropped and its subject read again by direct get), and one
// batch direct get.
const LIVE_MAX = 512;
const BATCH = 256;
const BATCH_BYTES = 2 << 20;
const READ_TIMEOUT = 10_000;
// With no live record for IDLE ms, the stream tails are read again (a
// lost record with nothing after it reveals no gap); the wait doubles up to
// MAX_IDLE while nothing is found.
const IDLE = 1000;
const MAX_IDLE = 8000;
const TERMINAL = new Set(["turn.completed", "turn.failed", "turn.rejected"]);

// What the display remembers: whether a line of streamed text is open, and
// the names of the turn's tool calls by id.
let lineOpen = false;
const toolNames = new Map();

const nc = await connectNATS(values, "turnstream submit (node)");
const js = jetstream(nc);
// checkAPI: false skips the account info request ($JS.API.INFO) a client
// may not be allowed.
const jsm = await jetstreamManager(nc, { checkAPI: false });
const subj = subjects(prefixOf(values));

// The turn's three record kinds: where each is stored, where its stream
// republishes it, and the stream sequence of the last record taken.
const chunks = { name: "chunks", stream: "TURN_CHUNKS", subject: subj.chunk(session, turn), live: subj.liveChunk(session, turn), last: 0 };
const messages = { name: "messages", stream: "TURN_MESSAGES", subject: subj.message(session), live: subj.liveMessage(session), last: 0 };
const events = { name: "events", stream: "TURN_EVENTS", subject: subj.event(session), live: subj.liveEvent(session), last: 0 };
const kinds = [chunks, messages, events];

// 1. Subscribe to the live subjects before anything is published. The
//    callbacks only queue records; the loop below takes them in order.
const live = [];
let wake = null;
for (const k of kinds) {
  nc.subscribe(k.live, {
    callback: (err, m) => {
      if (err) {
        fail(`subscription to ${k.live}: ${err.message}`);
      }
      if (live.length < LIVE_MAX) {
        live.push({ k, m });
      } else {
        k.stale = true; // dropped: read it again by direct get
      }
      wake?.();
    },
  });
}
await withTimeout(nc.flush(), READ_TIMEOUT, "subscribing");

// 2. Where this turn's messages and events can start: the session's
//    subjects hold every turn of the session (chunks have a subject per
//    turn, read from its start).
for (const k of [messages, events]) {
  k.last = (await jsm.streams.info(k.stream)).state.last_seq;
}

// 3. Submit. The message id makes a retried submit of the same turn run
//    once; a duplicate's records may already be stored, so read the
//    session from its start.
const h = headers();
h.set("Content-Type", "application/json");
const ack = await js
  .publish(subj.submit(session), JSON.stringify(request), { msgID: `${session}/${turn}`, headers: h, timeout: READ_TIMEOUT })
  .catch((err) => fail(`submitting to ${subj.submit(session)}: ${err.message}`));
if (ack.duplicate) {
  messages.last = events.last = 0;
}
console.error(`turn ${turn} of session ${session} submitted`);

// 4. Follow until the terminal event.
for (const k of kinds) {
  k.stale = true; // read what is stored before taking live records
}
let terminal = null;
let idle = IDLE;
for (;;) {
  for (const k of kinds) {
    if (k.stale && !(k === events && terminal)) {
      await catchUp(k);
    }
  }
  if (terminal) {
    break;
  }
  if (live.length === 0) {
    if (!(await liveOrIdle(idle))) {
      for (const k of kinds) {
        k.stale = true;
      }
      idle = Math.min(2 * idle, MAX_IDLE);
    }
    continue;
  }
  idle = IDLE;
  receive(live.shift());
}
// Everything of the turn is stored before its terminal event: read chunks
// and messages up to the last ones the stream leaders stored (a direct get
// may be served by a replica that lags), then end with it.
for (const k of [chunks, messages]) {
  const last = await jsm.streams.getMessage(k.stream, { last_by_subj: k.subject });
  while (last && k.last < last.seq) {
    await catchUp(k);
  }
}
printTerminal(terminal);
await nc.close();
process.exit(terminal.type === "turn.completed" ? 0 : 1);

// liveOrIdle waits up to ms for a live record; false if none came.
function liveOrIdle(ms) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      wake = null;
      resolve(false);
    }, ms);
    wake = () => {
      clearTimeout(timer);
      wake = null;
      resolve(true);
    };
  });
}

// receive takes a live record if it is the next of its subject: its
// Nats-Last-Sequence header is the stream sequence of the subject's
// previous stored record. Later than the last record taken means records
// were missed (live records are not acknowledged: a slow consumer or a
// reconnect loses them): the subject is read by direct get from there,
// this record included.
function receive({ k, m }) {
  const seq = Number(m.headers?.get("Nats-Sequence"));
  const prev = Number(m.headers?.get("Nats-Last-Sequence"));
  if (m.headers?.get("Nats-Stream") !== k.stream || !(seq > 0) || Number.isNaN(prev)) {
    return; // not a record the stream republished
  }
  if (seq <= k.last || k.stale || (k === events && terminal)) {
    return; // taken already, or the next read fetches it
  }
  if (prev > k.last) {
    k.stale = true; // a gap
    return;
  }
  take(k, seq, m.headers, m.data);
}

// catchUp reads a subject's records stored after the last one taken with
// batch direct gets ($JS.API.DIRECT.GET.<stream> {seq, next_by_subj,
// batch, max_bytes}) until it has the last one stored.
async function catchUp(k) {
  for (;;) {
    const batch = await readBatch(k);
    let took = 0;
    for (const r of batch) {
      if (r.subject === k.subject && r.seq > k.last) {
        take(k, r.seq, r.header, r.data);
        took++;
      }
      if (k === events && terminal) {
        k.stale = false;
        return; // nothing of the turn follows its terminal event
      }
    }
    const pending = batch.length === 0 ? 0 : batch.at(-1).pending;
    if (pending === 0) {
      k.stale = false;
      return;
    }
    if (took === 0) {
      fail(`direct get of ${k.subject} after ${k.last} made no progress`);
    }
  }
}

function readBatch(k) {
  const records = [];
  const read = new Promise((resolve, reject) => {
    jsm.direct
      .getBatch(k.stream, {
        seq: k.last + 1,
        next_by_subj: k.subject,
        batch: BATCH,
        max_bytes: BATCH_BYTES,
        callback: (done, r) => {
          if (!done) {
            records.push(r);
          } else if (done.err && done.err.code !== 404) {
            reject(done.err);
          } else {
            resolve(records); // the end of the batch, or 404: nothing stored after seq
          }
        },
      })
      .catch(reject);
  });
  return withTimeout(read, READ_TIMEOUT, `direct get of ${k.subject}`).catch((err) =>
    fail(`reading ${k.name} of ${session}/${turn}: ${err.message}`),
  );
}

// take moves a kind past a stored record and shows it, if it is this
// turn's.
function take(k, seq, hdrs, data) {
  k.last = seq;
  const type = hdrs?.get("Content-Type");
  if (type && type !== "application/json") {
    return; // another turn's msgpack record: this example reads JSON only
  }
  let rec;
  try {
    rec = JSON.parse(new TextDecoder().decode(data));
  } catch {
    console.error(`skipping an undecodable record of ${k.subject} at ${seq}`);
    return;
  }
  if (k === chunks) {
    printChunk(rec);
  } else if (rec.turn_id !== turn) {
    // the session's other turns
  } else if (k === messages) {
    printMessage(rec);
  } else if (TERMINAL.has(rec.type)) {
    terminal = rec; // printed once chunks and messages caught up
  }
}

// Display. Text deltas stream as they come; an attempt ends with a marker
// chunk, and only a completed attempt counts: the text of one that ends
// retrying or failed is superseded.
function printChunk(c) {
  if (c.delta?.text) {
    process.stdout.write(c.delta.text);
    lineOpen = true;
  }
  if (c.marker && c.marker !== "completed") {
    endLine();
    console.log(`[step ${c.step} attempt ${c.attempt} ended ${c.marker}${c.failure ? ` (${c.failure})` : ""}: its text above does not count]`);
  }
}

function printMessage(m) {
  if (m.role === "user") {
    endLine();
    console.log(`> ${m.content}`);
  } else if (m.role === "assistant") {
    for (const call of m.tool_calls ?? []) {
      toolNames.set(call.id, call.name);
      endLine();
      console.log(`→ ${call.name} ${call.arguments}`);
    }
  } else if (m.role === "tool") {
    endLine();
    console.log(`← ${toolNames.get(m.tool_call_id) ?? "tool"}: ${m.content}${m.is_error ? " (error)" : ""}`);
  }
}

function printTerminal(ev) {
  endLine();
  const payload = ev.payload ?? {};
  if (ev.type === "turn.completed") {
    console.log(`✓ turn.completed: ${payload.steps ?? "?"} steps, ${payload.tool_calls ?? 0} tool calls`);
  } else {
    console.log(`✗ ${ev.type}: ${payload.reason ?? "no reason given"}`);
  }
}

function endLine() {
  if (lineOpen) {
    process.stdout.write("\n");
    lineOpen = false;
  }
}
