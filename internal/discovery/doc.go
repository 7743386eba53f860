// Package discovery registers a turnstream process as a NATS service
// (nats.go/micro), so that `nats micro ls`, `info` and `stats` show the
// fleet: a worker as turnstream-worker, a tool worker as turnstream-tools.
// That is its one job.
//
// A registered process answers the services' PING, INFO and STATS requests
// ($SRV.PING, $SRV.INFO.<name>, ...) with its name, version (SemVer,
// internal/version), id and metadata (its instance id, the one its leases
// or claims name, and the subject prefix), and one endpoint, "config", on
// <prefix>.svc.<role>.config (wire.Subjects.Service): a JSON summary of its
// configuration that holds no secret (config.Summary for a worker,
// ToolsConfig for a tool worker). STATS gives that endpoint's live
// counters as its data: WorkerStats (turns in flight, ready or why not) or
// ToolsStats (each tool's binding state and calls handled).
//
// The server's permissions decide who may ask: operators, never clients
// (deploy/nats/nats-server.conf). A registration the server refuses (no
// permission to subscribe to $SRV or the config subject) is an error
// wrapping ErrRefused, which callers log and go on without: discovery is
// never a reason not to run turns or serve tools. It reads nothing from
// requests and takes no part in turns; Stop unregisters.
package discovery
