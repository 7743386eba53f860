package wire

import (
	"strings"
	"testing"
)

func TestLiveSubjects(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"LiveChunk", Subjects{}.LiveChunk("s1", "t1"), "turn.live.chunk.s1.t1"},
		{"LiveMessage", Subjects{}.LiveMessage("s1"), "turn.live.message.s1"},
		{"LiveEvent", Subjects{}.LiveEvent("s1"), "turn.live.event.s1"},
		{"prefix LiveChunk", Subjects{Prefix: "acme"}.LiveChunk("s1", "t1"), "acme.live.chunk.s1.t1"},
		{"dotted prefix LiveMessage", Subjects{Prefix: "acme.turn"}.LiveMessage("s1"), "acme.turn.live.message.s1"},
		{"prefix LiveEvent", Subjects{Prefix: "acme"}.LiveEvent("s1"), "acme.live.event.s1"},
		{"All live", Subjects{}.All("live"), "turn.live.>"},
		{"Service", Subjects{}.Service("worker", "config"), "turn.svc.worker.config"},
		{"prefix Service", Subjects{Prefix: "acme.turn"}.Service("tools", "config"), "acme.turn.svc.tools.config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("%s = %q; want %q", tt.name, tt.got, tt.want)
			}
		})
	}
}

// TestLiveSubjectsOutsideStreams: a stream's RePublish destination must not
// be one of the subjects any stream stores, or the server refuses the
// stream (a cycle) or stores the republished copies; nor may a service's
// subject, whose requests would be stored.
func TestLiveSubjectsOutsideStreams(t *testing.T) {
	for _, s := range []Subjects{{}, {Prefix: "acme.turn"}} {
		live := []string{s.LiveChunk("s1", "t1"), s.LiveMessage("s1"), s.LiveEvent("s1"), s.Service("worker", "config")}
		for _, kind := range []string{"submit", "chunk", "message", "event", "tool", "result", "dead"} {
			stored := strings.TrimSuffix(s.All(kind), ">")
			for _, subj := range live {
				if strings.HasPrefix(subj, stored) {
					t.Errorf("subject %q is stored by %q", subj, s.All(kind))
				}
			}
		}
	}
}
