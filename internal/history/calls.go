package history

import (
	"encoding/json"
	"regexp"
	"slices"

	"github.com/turnstream/turnstream/pkg/wire"
)

// UnparseableCall names the placeholder that replays a call whose name or
// arguments no provider would accept: the call keeps its id, so the error
// result that answered it stays paired; its arguments are empty, never
// invented. It describes failed history; nothing runs it.
const UnparseableCall = "unparseable_tool_call"

var replayableName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// replayCalls returns calls as a provider may receive them again, and how
// many were replaced by the placeholder.
func replayCalls(calls []wire.Call) ([]wire.Call, int) {
	out, n := calls, 0
	for i, c := range calls {
		if replayableName.MatchString(c.Name) && isObject(c.Arguments) {
			continue
		}
		if n == 0 {
			out = slices.Clone(calls)
		}
		out[i] = wire.Call{ID: c.ID, Name: UnparseableCall, Arguments: "{}"}
		n++
	}
	return out, n
}

func isObject(s string) bool {
	var v map[string]json.RawMessage
	return json.Unmarshal([]byte(s), &v) == nil && v != nil
}
