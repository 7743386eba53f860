package history

import "github.com/turnstream/turnstream/pkg/wire"

// Selection is a step's history: the current turn, always whole, and the
// newest prior units that fit the token budget, as one chronological
// suffix; the older units are left for compression.
type Selection struct {
	// Dropped are the older prior units not selected, chronological.
	Dropped []Unit
	// Prior are the selected prior units, chronological.
	Prior []Unit
	// Current are the current turn's units: protected, never dropped.
	Current []Unit
	// Budget is the token budget prior units were selected in; Used what
	// they take.
	Budget, Used int
}

// Select splits log around turn and fills budget (tokens) with the newest
// prior units, stopping at the first that does not fit, so the selection
// stays a contiguous suffix and multi-call groups are never split.
func Select(log []wire.Message, turn string, budget int) Selection {
	st := StateOf(log, turn)
	prior, current := log[:st.Start], log[st.Start:]
	units := Units(prior)
	s := Selection{Current: Units(current), Budget: budget}
	i := len(units)
	for i > 0 && s.Used+units[i-1].Tokens <= budget {
		i--
		s.Used += units[i].Tokens
	}
	s.Dropped, s.Prior = units[:i], units[i:]
	return s
}

// CurrentTokens is the estimate of the current turn's units.
func (s *Selection) CurrentTokens() int {
	n := 0
	for _, u := range s.Current {
		n += u.Tokens
	}
	return n
}
