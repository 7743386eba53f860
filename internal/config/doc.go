// Package config loads a worker's configuration: providers (wire API, base
// URL, where the key lives), models and their capabilities, routes (a primary
// target and its fallback chain), budget defaults and ceilings, and worker
// settings. A file is YAML, validated against schemas/config.schema.json and
// then semantically (every route target names a configured provider and
// model). Keys are read from the environment or from files the config names,
// never from requests and never from the config file itself.
//
// It derives the JetStream topology a configured worker ensures
// (Config.Topology, a bus.Topology) but never talks to NATS: bus builds
// and ensures the streams, buckets and consumers.
//
// Config is loaded once at start; nothing here watches for changes.
package config
