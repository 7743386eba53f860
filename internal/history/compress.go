package history

import (
	"fmt"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// SummaryInstruction asks a summarization route to compress dropped
// history; it is the last message of the summary request.
const SummaryInstruction = "Summarize the conversation above for whoever continues it: the user's goals and constraints, decisions made, facts learned from tools, and open questions. Be concise and factual."

// CompressionInput renders dropped units for a summarizer: text only, tool
// groups flat with their stored (redacted) arguments. No echo, raw
// reasoning, provider payload or runtime metadata reaches it: units carry
// none of them, and only content and roles are read.
func CompressionInput(units []Unit) []provider.Message {
	var out []provider.Message
	for _, u := range units {
		if u.Group {
			out = append(out, flat(u)...)
			continue
		}
		var text string
		for i := range u.Msgs {
			text += u.Msgs[i].Content
		}
		out = append(out, provider.Message{Role: u.Msgs[len(u.Msgs)-1].Role, Content: text})
	}
	return append(out, provider.Message{Role: wire.RoleUser, Content: SummaryInstruction})
}

// FallbackSummary says, deterministically, what was left out when no
// summarization route is configured (or it failed): the request stays
// valid and the model knows history is missing.
func FallbackSummary(units []Unit) string {
	var users, assistants, tools int
	for _, u := range units {
		for _, m := range u.Msgs {
			switch m.Role {
			case wire.RoleUser:
				users++
			case wire.RoleAssistant:
				assistants++
			case wire.RoleTool:
				tools++
			}
		}
	}
	return fmt.Sprintf("Earlier parts of this conversation were left out to fit the context window: %d user messages, %d assistant messages and %d tool results.", users, assistants, tools)
}

// SummaryPrefix introduces a summary in the request.
const SummaryPrefix = "Summary of the earlier conversation, which was left out to fit the context window:\n"
