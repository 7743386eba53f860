package worker

// SetDecodeHook sets a function called with every request body about to be
// decoded. Crash tests use it in a child process to die inside decode.
func SetDecodeHook(f func(data []byte)) { testHookDecode = f }
