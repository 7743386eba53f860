package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// ClusterReplicas is the replica count ReplicasFor gives every stream in a
// JetStream cluster: three replicas keep a quorum, and every acknowledged
// write, while one node is down.
const ClusterReplicas = 3

// ReplicasFor is the replica count for streams when the configuration names
// none (Topology.Replicas 0; a configured count always wins, and applying
// that rule is the caller's job): ClusterReplicas (3) when the servers form
// a cluster, 1 on a standalone server.
//
// It first asks JetStream for the account's info ($JS.API.INFO) and returns
// its error: JetStream must be reachable (in a cluster only the meta leader
// answers), and the answer proves the connection is up, so that the
// connected server's INFO can be read. That INFO names the server's
// cluster. No cluster: a standalone server, which cannot replicate: 1. A
// cluster: 3.
//
// It does not count the JetStream peers, because no count a client can get
// is safe to lower the replicas with. A regular account sees only the
// servers that are up (the routes' gossip, the account STATZ ping), never
// the meta group's members (that takes the system account), and:
//
//   - a JetStream cluster elects no meta leader with fewer than two
//     servers, so a count of one happens only to a meta leader that has
//     just lost its peers and not yet stepped down (tested: two of three
//     nodes killed), and a count of two is a three-node cluster with a node
//     down (a rolling restart) far more often than a two-node cluster.
//     Answering 1 or 2 there would have Ensure scale every R3 stream down
//     while nodes are away; R3 is created, and serves, with one of three
//     nodes down.
//   - a wrong 3 fails loudly where a wrong 1 silently drops replicas. A
//     server that names a cluster but runs JetStream alone (a cluster
//     block without routes) refuses R3 with "replicas > 1 not supported in
//     non-clustered mode", which EnsureRetry returns at once; a real
//     two-node JetStream cluster (no fault tolerance; NATS advises three or
//     five nodes) refuses it as "no suitable peers", which EnsureRetry
//     reports through onRetry. Both must configure their replica count.
//
// Production configs should name it anyway (deploy/worker.yaml does): this
// is the default for dev and small setups.
func ReplicasFor(ctx context.Context, js jetstream.JetStream) (int, error) {
	if _, err := js.AccountInfo(ctx); err != nil {
		return 0, fmt.Errorf("bus: replicas: account info: %w", err)
	}
	nc := js.Conn()
	// A connection that dropped since the answer came has no server INFO
	// to read (its cluster name reads empty): let the caller ask again.
	if !nc.IsConnected() {
		return 0, fmt.Errorf("bus: replicas: %w", nats.ErrDisconnected)
	}
	if nc.ConnectedClusterName() == "" {
		return 1, nil
	}
	return ClusterReplicas, nil
}

// EnsureTopology is what a worker runs at start, and `turnstream streams`
// the same way: it resolves t's replica count when t names none (Replicas
// 0: ReplicasFor, asked again with EnsureRetry's backoff until the servers
// answer or ctx ends), then ensures t with EnsureRetry. Retries are logged
// to log, at WARN on the first attempt and every tenth, else at DEBUG. It
// returns t as ensured, its replica count resolved.
func EnsureTopology(ctx context.Context, js jetstream.JetStream, t Topology, log zerolog.Logger) (Topology, error) {
	retry := func(attempt int, err error, next time.Duration) {
		ev := log.Debug()
		if attempt == 1 || attempt%10 == 0 {
			ev = log.Warn()
		}
		ev.Err(err).Int("attempt", attempt).Dur("next", next).Msg("JetStream not ready; retrying")
	}
	if t.Replicas == 0 {
		b := backoff.WithContext(backoff.NewExponentialBackOff(
			backoff.WithInitialInterval(ensureInitialInterval), backoff.WithMaxInterval(ensureMaxInterval),
			backoff.WithMaxElapsedTime(0)), ctx)
		attempt := 0
		err := backoff.RetryNotify(func() error {
			attempt++
			actx, cancel := context.WithTimeout(ctx, replicasAttemptTimeout)
			defer cancel()
			n, err := ReplicasFor(actx, js)
			t.Replicas = n
			return err
		}, b, func(err error, next time.Duration) { retry(attempt, err, next) })
		if err != nil {
			return t, err
		}
		log.Info().Int("replicas", t.Replicas).Msg("stream replicas chosen for the server")
	}
	return t, EnsureRetry(ctx, js, t, retry)
}

// Backoff of EnsureRetry between attempts.
const (
	ensureInitialInterval = 100 * time.Millisecond
	ensureMaxInterval     = 5 * time.Second
	// ensureAttemptTimeout bounds one attempt (a few JetStream requests),
	// so that a request whose answer was lost (its server died) delays
	// the next attempt by this much, not until ctx ends.
	ensureAttemptTimeout = 15 * time.Second
	// replicasAttemptTimeout bounds one ReplicasFor of EnsureTopology.
	replicasAttemptTimeout = 10 * time.Second
)

// EnsureRetry runs t.Ensure until it succeeds, waiting between attempts
// with exponential backoff (100ms growing to 5s, jittered, no limit on the
// total) and bounding each attempt by 15s. It is how a worker starts before
// or during a NATS outage: the servers may not be up yet, a cluster may
// still be electing its meta leader, a node may be restarting.
//
// Before each wait it calls onRetry (if not nil) with the attempt number
// (from 1), the attempt's error and the wait. When ctx ends it returns an
// error that matches ctx.Err() with errors.Is (and the last attempt's
// error, if any). It returns at once, without retrying, an error that
// retrying cannot fix (see below).
//
// Permanent errors: a closed connection; a client-side refusal of the
// configuration (an invalid stream, consumer or bucket name or option); a
// JetStream API error with code 400 (the server refuses the request as
// made: a replica count that cannot be changed, limits over the account's),
// and the two configuration refusals nats-server reports as 500: an
// invalid stream configuration (10052) and replicas on a server that is
// not clustered (10074). Three 400 errors are transient and retried: no
// suitable peers for placement (10005: nodes are down or not yet known),
// a cluster membership change in progress (10202), and a stream created
// with another configuration at the same time (10058: the next attempt
// updates it). Everything else, timeouts, no responders, "JetStream not
// enabled" while a server starts, "temporarily unavailable" without a meta
// leader, is retried.
func EnsureRetry(ctx context.Context, js jetstream.JetStream, t Topology, onRetry func(attempt int, err error, next time.Duration)) error {
	b := backoff.WithContext(backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(ensureInitialInterval),
		backoff.WithMaxInterval(ensureMaxInterval),
		backoff.WithMaxElapsedTime(0),
	), ctx)
	var (
		attempt int
		last    error
	)
	err := backoff.RetryNotify(func() error {
		attempt++
		if err := ctx.Err(); err != nil {
			return backoff.Permanent(err)
		}
		actx, cancel := context.WithTimeout(ctx, ensureAttemptTimeout)
		err := t.Ensure(actx, js)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return backoff.Permanent(ctx.Err())
		}
		last = err
		if permanentEnsureError(err) {
			return backoff.Permanent(err)
		}
		return err
	}, b, func(err error, next time.Duration) {
		if onRetry != nil {
			onRetry(attempt, err, next)
		}
	})
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		if last != nil {
			return fmt.Errorf("bus: topology not ensured after %d attempts: %w (last: %w)", attempt, cerr, last)
		}
		return fmt.Errorf("bus: topology not ensured: %w", cerr)
	}
	return err
}

// JetStream error codes EnsureRetry decides on that nats.go does not name.
const (
	errCodeClusterNoPeers         jetstream.ErrorCode = 10005
	errCodeStreamInvalidConfig    jetstream.ErrorCode = 10052
	errCodeReplicasNotSupported   jetstream.ErrorCode = 10074
	errCodeMemberChangeInProgress jetstream.ErrorCode = 10202
	apiCodeBadRequest                                 = 400
)

// permanentEnsureError reports whether retrying Ensure cannot fix err; see
// EnsureRetry.
func permanentEnsureError(err error) bool {
	for _, target := range []error{
		nats.ErrConnectionClosed,
		jetstream.ErrConnectionClosed,
		nats.ErrAuthorization,
		nats.ErrPermissionViolation,
		nats.ErrBadSubject,
		jetstream.ErrStreamNameRequired,
		jetstream.ErrInvalidStreamName,
		jetstream.ErrInvalidSubject,
		jetstream.ErrInvalidConsumerName,
		jetstream.ErrInvalidBucketName,
		jetstream.ErrHistoryTooLarge,
		jetstream.ErrInvalidOption,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode {
	case errCodeClusterNoPeers, errCodeMemberChangeInProgress, jetstream.JSErrCodeStreamNameInUse:
		return false
	case errCodeStreamInvalidConfig, errCodeReplicasNotSupported:
		return true
	}
	return apiErr.Code == apiCodeBadRequest
}
