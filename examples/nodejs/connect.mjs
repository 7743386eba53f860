// connect.mjs: what submit.mjs and tool.mjs share: the connection to NATS
// (from flags, else the environment), the turnstream subject names, and
// failing with a clear message.
//
//   --nats-url URL      or NATS_URL            default nats://127.0.0.1:4222
//                                              (a comma-separated list; may carry user:password@)
//   --user U            or NATS_USER
//   --password P        or NATS_PASSWORD
//   --inbox-prefix P    or NATS_INBOX_PREFIX   default _INBOX; a deployment that
//                                              shares an account between users
//                                              gives each its own, e.g. _INBOX_alice
//   --prefix P          or TURN_PREFIX         default turn (the workers' nats.prefix)

import { basename } from "node:path";
import { parseArgs } from "node:util";
import { connect } from "@nats-io/transport-node";

// The flags every script takes, for node:util parseArgs.
export const connectionFlags = {
  "nats-url": { type: "string" },
  user: { type: "string" },
  password: { type: "string" },
  "inbox-prefix": { type: "string" },
  prefix: { type: "string" },
  help: { type: "boolean", short: "h" },
};

const script = basename(process.argv[1] ?? "turnstream");

// fail prints what went wrong and ends the process with status 1.
export function fail(message) {
  console.error(`${script}: ${message}`);
  process.exit(1);
}

// parse parses the command line with the connection flags and the
// script's own, printing usage for --help or a bad flag.
export function parse(flags, usage) {
  let parsed;
  try {
    parsed = parseArgs({ options: { ...connectionFlags, ...flags }, allowPositionals: true });
  } catch (err) {
    console.error(`${script}: ${err.message}\n${usage}`);
    process.exit(2);
  }
  if (parsed.values.help) {
    console.log(usage);
    process.exit(0);
  }
  return parsed;
}

// seconds reads a flag given in seconds as milliseconds.
export function seconds(values, name) {
  const s = Number(values[name]);
  if (!Number.isFinite(s) || s <= 0) {
    fail(`--${name} must be a number of seconds, not ${JSON.stringify(values[name])}`);
  }
  return s * 1000;
}

// Session, turn and tool tokens of turnstream subjects.
const TOKEN = /^[A-Za-z0-9_-]{1,128}$/;
export const validToken = (s) => typeof s === "string" && TOKEN.test(s);

// subjects names the turnstream subjects under prefix (README: Subjects).
export function subjects(prefix = "turn") {
  return {
    submit: (s) => `${prefix}.submit.${s}`,
    chunk: (s, t) => `${prefix}.chunk.${s}.${t}`,
    message: (s) => `${prefix}.message.${s}`,
    event: (s) => `${prefix}.event.${s}`,
    liveChunk: (s, t) => `${prefix}.live.chunk.${s}.${t}`,
    liveMessage: (s) => `${prefix}.live.message.${s}`,
    liveEvent: (s) => `${prefix}.live.event.${s}`,
    tool: (name) => `${prefix}.tool.${name}`,
    result: (s) => `${prefix}.result.${s}`,
  };
}

// prefixOf is the subject prefix the flags or TURN_PREFIX name.
export const prefixOf = (values) => values.prefix ?? process.env.TURN_PREFIX ?? "turn";

// connectNATS connects as the flags or the environment say. Every reply
// this connection receives (request replies, JetStream publish acks,
// direct gets, pulled messages) comes on the inbox prefix.
export async function connectNATS(values, name) {
  const servers = (values["nats-url"] ?? process.env.NATS_URL ?? "nats://127.0.0.1:4222").split(",");
  const opts = { servers, name, timeout: 10_000 };
  const user = values.user ?? process.env.NATS_USER;
  const pass = values.password ?? process.env.NATS_PASSWORD;
  if (user) {
    opts.user = user;
    opts.pass = pass;
  }
  const inboxPrefix = values["inbox-prefix"] ?? process.env.NATS_INBOX_PREFIX;
  if (inboxPrefix) {
    opts.inboxPrefix = inboxPrefix;
  }
  try {
    const nc = await connect(opts);
    reportAsyncErrors(nc);
    return nc;
  } catch (err) {
    fail(`cannot connect to NATS at ${servers.map(redact).join(",")}: ${err.message}`);
  }
}

// reportAsyncErrors prints the server's asynchronous errors, such as a
// subscription its permissions refuse (a refused reply subject otherwise
// only shows as requests timing out), and fails when the connection closes
// under the script.
function reportAsyncErrors(nc) {
  (async () => {
    for await (const s of nc.status()) {
      if (s.type === "error") {
        console.error(`${script}: NATS: ${s.error?.message ?? s.error}`);
      }
    }
  })().catch(() => {});
  nc.closed().then((err) => {
    if (err) {
      fail(`NATS connection closed: ${err.message}`);
    }
  });
}

// redact hides a password in a server URL.
function redact(url) {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@");
}

// withTimeout bounds a promise: it rejects with "<what> timed out" after ms.
export function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms / 1000}s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
