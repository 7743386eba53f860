package wire

import "testing"

func TestEventField(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"budget", "budget"},
		{"input[1].author", "input[1].author"},
		{"tools[0].parameters.properties.a", "tools[0].parameters.properties.a"},
		{`payload["a b"]`, "payload[?]"},
		{`["my secret"].x`, "[?].x"},
		{`input[0]["quote \" inside"].y`, "input[0][?].y"},
		{`["` + "0123456789012345678901234567890" + `..."]`, "[?]"},
		{`a["\u00e9t\u00e9"]["b\\"]`, "a[?][?]"},
	}
	for _, tt := range tests {
		if got := EventField(tt.in); got != tt.want {
			t.Errorf("EventField(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzEventField: whatever a path holds, its event form is made of key
// characters, dots, indexes and "[?]" only, and no longer.
func FuzzEventField(f *testing.F) {
	for _, s := range []string{"budget", `payload["a b"]`, `["x\""]`, `["`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		var p pathBuilder
		p.key([]byte("input"))
		p.index(0)
		p.key([]byte(key))
		field := p.String()
		got := EventField(field)
		if len(got) > len(field)+3 {
			t.Fatalf("EventField(%q) = %q: longer than its path", field, got)
		}
		for _, c := range got {
			if !pathChar(c) {
				t.Fatalf("EventField(%q) = %q: holds %q", field, got, c)
			}
		}
	})
}
