// tool.mjs: serve one turnstream tool, echo, from Node.js.
//
//   node tool.mjs [--max-calls N] [--bind-timeout 120] [connection flags]
//
// A tool worker in any language does what this one does:
//
//   1. binds the tool's durable pull consumer, tool-<name> on stream
//      TURN_TOOLS, and never creates it: the turnstream workers create it
//      at the tool's first call, so until then it waits, up to
//      --bind-timeout seconds;
//   2. fetches calls (ToolCall JSON on turn.tool.<name>) one at a time;
//   3. runs the call and publishes its ToolResult JSON to
//      turn.result.<session> with JetStream (so the publish is
//      acknowledged), with Nats-Msg-Id
//      result:<base64url(sha256(token))> (a redelivered call's result is
//      stored once; only who received the call can know the id, and it
//      names nothing) and Content-Type
//      application/json, copying the call's token into the result (the
//      turn workers take only results that carry their call's token);
//   4. acks the call only once the result's publish is acknowledged: a
//      tool worker that dies in between has its call redelivered.
//
// A call whose deadline has passed is terminated without a result: the
// turn worker has written a timeout result for it. echo is idempotent, so
// running a redelivered call again is harmless; a tool with effects must
// claim each call first, as the Go SDK (pkg/toolworker) does in TURN_CLAIMS.
// A call that runs longer than the consumer's ack wait (30s by default)
// must call m.working() meanwhile.
//
// Permissions it needs: publish $JS.API.CONSUMER.INFO.TURN_TOOLS.tool-echo,
// $JS.API.CONSUMER.MSG.NEXT.TURN_TOOLS.tool-echo, $JS.ACK.TURN_TOOLS.tool-echo.>
// and turn.result.>; subscribe its inbox prefix.
//
// It serves until SIGINT or SIGTERM, or until it answered --max-calls calls.

import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { headers } from "@nats-io/transport-node";
import { jetstream, JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { connectNATS, fail, parse, prefixOf, seconds, subjects, validToken, withTimeout } from "./connect.mjs";

const usage = `usage: node tool.mjs [--max-calls N] [--bind-timeout SECONDS] [connection flags]

  --max-calls N      exit 0 after answering N calls (default: serve until SIGINT or SIGTERM)
  --bind-timeout S   give up when the tool's consumer does not exist after S seconds (default 120)
  connection flags: --nats-url, --user, --password, --inbox-prefix, --prefix (see connect.mjs)`;

const { values } = parse({ "max-calls": { type: "string" }, "bind-timeout": { type: "string", default: "120" } }, usage);
const maxCalls = values["max-calls"] === undefined ? Infinity : Number(values["max-calls"]);
if (!(maxCalls > 0)) {
  fail(`--max-calls must be a positive number, not ${JSON.stringify(values["max-calls"])}`);
}

const TOOL = "echo";
const STREAM = "TURN_TOOLS";
const CONSUMER = `tool-${TOOL}`;
const TIMEOUT = 10_000; // bounds every request
const FETCH_EXPIRES = 5000; // a pull waits this long for a call

// echo is the tool: it answers with its "text" argument.
function echo(args) {
  if (typeof args.text !== "string") {
    return { content: 'echo: the argument "text" (a string) is required', is_error: true };
  }
  return { content: `node echo: ${args.text}`, is_error: false };
}

const nc = await connectNATS(values, `turnstream ${TOOL} tool (node)`);
const js = jetstream(nc);
const subj = subjects(prefixOf(values));

let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    stopping = true; // after the call in hand, if any
  });
}

const consumer = await bind(seconds(values, "bind-timeout"));
console.log(`serving ${TOOL} on ${subj.tool(TOOL)} (consumer ${CONSUMER} on ${STREAM})`);
let answered = 0;
while (!stopping && answered < maxCalls) {
  const m = await consumer.next({ expires: FETCH_EXPIRES }).catch((err) => fail(`fetching calls: ${err.message}`));
  if (m && (await serve(m))) {
    answered++;
  }
}
await nc.drain();
process.exit(0);

// bind looks the tool's consumer up (a CONSUMER.INFO request) until it
// exists.
async function bind(timeout) {
  const deadline = Date.now() + timeout;
  let said = false;
  for (;;) {
    try {
      return await js.consumers.get(STREAM, CONSUMER);
    } catch (err) {
      const missing = err instanceof JetStreamApiError && [JetStreamApiCodes.ConsumerNotFound, JetStreamApiCodes.StreamNotFound].includes(err.code);
      if (!missing) {
        fail(`binding consumer ${CONSUMER} on ${STREAM}: ${err.message}`);
      }
    }
    if (Date.now() > deadline) {
      fail(`no consumer ${CONSUMER} on ${STREAM} after ${timeout / 1000}s: the turnstream workers create it at the tool's first call`);
    }
    if (!said) {
      console.log(`waiting for consumer ${CONSUMER} on ${STREAM} (created by the workers at the first call of ${TOOL})`);
      said = true;
    }
    if (stopping) {
      process.exit(0);
    }
    await sleep(500);
  }
}

// serve answers one call; it reports whether the call was answered.
async function serve(m) {
  const type = m.headers?.get("Content-Type");
  if (type && type !== "application/json") {
    m.term(`unsupported content type ${type}`);
    console.error(`terminated a call in ${type}: this example reads JSON only`);
    return false;
  }
  let call;
  try {
    call = m.json();
  } catch {
    m.term("not JSON");
    console.error("terminated a call that is not JSON");
    return false;
  }
  if (!validToken(call.session_id) || typeof call.turn_id !== "string" || typeof call.call_id !== "string" || call.name !== TOOL) {
    m.term("invalid call");
    console.error(`terminated an invalid call: ${JSON.stringify({ session_id: call.session_id, turn_id: call.turn_id, call_id: call.call_id, name: call.name })}`);
    return false;
  }
  if (call.deadline && Date.parse(call.deadline) <= Date.now()) {
    m.term("deadline passed");
    console.error(`terminated call ${call.call_id}: its deadline ${call.deadline} has passed`);
    return false;
  }

  let out;
  try {
    out = echo(JSON.parse(call.arguments || "{}"));
  } catch {
    out = { content: "echo: the arguments are not JSON", is_error: true };
  }
  const result = { session_id: call.session_id, turn_id: call.turn_id, call_id: call.call_id, content: out.content, is_error: out.is_error };
  if (call.token !== undefined) {
    result.token = call.token;
  }

  const h = headers();
  h.set("Content-Type", "application/json");
  try {
    await js.publish(subj.result(call.session_id), JSON.stringify(result), {
      msgID: `result:${createHash("sha256").update(call.token ?? "").digest("base64url")}`,
      headers: h,
      timeout: TIMEOUT,
    });
  } catch (err) {
    console.error(`publishing the result of call ${call.call_id} failed (${err.message}); it will be redelivered`);
    m.nak(1000);
    return false;
  }
  try {
    await withTimeout(m.ackAck({ timeout: TIMEOUT }), TIMEOUT, "ack");
  } catch (err) {
    // The result is stored: a redelivery publishes it again, and the
    // stream discards the duplicate.
    console.error(`acking call ${call.call_id} failed: ${err.message}`);
  }
  console.log(`answered ${call.call_id} of ${call.session_id}/${call.turn_id}: ${out.content}`);
  return true;
}
