#!/bin/sh
# Prints fresh NATS passwords and the JetStream store key for compose.yaml:
#   ./env.sh > .env
# Values are letters and digits starting with a letter, as
# deploy/nats/nats-server.conf requires. Keep TURNSTREAM_JS_KEY: the store
# cannot be read without it.
set -eu
for role in CLIENT WORKER OPERATOR TOOLWORKER AUDITOR SYS ROUTE; do
  echo "TURNSTREAM_${role}_PASSWORD=p$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"
done
echo "TURNSTREAM_JS_KEY=k$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"
