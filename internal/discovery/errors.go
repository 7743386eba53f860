package discovery

import "errors"

// ErrRefused is wrapped by Register's error when the server refused one
// of the service's subscriptions (a permissions violation): no one could
// reach the service, so it is stopped.
var ErrRefused = errors.New("discovery: registration refused by the server's permissions")
