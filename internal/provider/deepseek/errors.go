package deepseek

import "errors"

// Errors Prepare wraps in an INVALID_REQUEST *provider.Failure.
var (
	// ErrImages: DeepSeek's Chat Completions API takes text only, and an
	// image is never flattened into text.
	ErrImages = errors.New("deepseek: images are not supported")
	// ErrRole: a message role DeepSeek has no wire shape for.
	ErrRole = errors.New("deepseek: unknown message role")
)
