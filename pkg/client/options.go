package client

import (
	"fmt"
	"strings"

	"github.com/turnstream/turnstream/pkg/wire"
)

// Option configures a Client. Options are validated by New.
type Option func(*options) error

type options struct {
	prefix string
	codec  wire.Codec
}

// WithPrefix sets the first token(s) of every subject the client uses. It
// must match the workers' prefix. Default wire.DefaultPrefix ("turn").
//
// The prefix is a literal subject: dot-separated, non-empty tokens without
// wildcards or whitespace.
func WithPrefix(prefix string) Option {
	return func(o *options) error {
		if !validPrefix(prefix) {
			return fmt.Errorf("%w: prefix %q: must be a literal subject of non-empty tokens", ErrInvalidOption, prefix)
		}
		o.prefix = prefix
		return nil
	}
}

// WithCodec sets the encoding of submitted requests and cancels (workers
// answer in the request's encoding). Its content type must be one that
// wire.CodecFor understands. Default wire.JSON; wire.Msgpack sends
// Content-Type application/msgpack.
//
// Records are always decoded by their own Content-Type header, whatever the
// client's codec.
func WithCodec(codec wire.Codec) Option {
	return func(o *options) error {
		if codec == nil {
			return fmt.Errorf("%w: nil codec", ErrInvalidOption)
		}
		if _, err := wire.CodecFor(codec.ContentType()); err != nil {
			return fmt.Errorf("%w: codec: %w", ErrInvalidOption, err)
		}
		o.codec = codec
		return nil
	}
}

func validPrefix(p string) bool {
	if p == "" {
		return false
	}
	for tok := range strings.SplitSeq(p, ".") {
		if tok == "" || strings.ContainsAny(tok, "*> \t\r\n") {
			return false
		}
	}
	return true
}
