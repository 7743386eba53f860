package toolworker

import "github.com/turnstream/turnstream/pkg/wire"

// SetClaimDoneHook sets a function called once a delivery has recorded its
// result in the call's claim and before it publishes it. Crash tests use it
// in a child process to die there.
func SetClaimDoneHook(f func(call wire.ToolCall)) { testHookClaimDone = f }
