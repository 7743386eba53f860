package openaiwire_test

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"

	"github.com/turnstream/turnstream/internal/provider/openaiwire"
)

// terminated is what Terminate must make of in: in, with one more newline
// when in ends with a complete line but no blank line.
func terminated(in []byte) []byte {
	n := len(in)
	if n > 0 && in[n-1] == '\n' && (n == 1 || in[n-2] != '\n') {
		return append(append([]byte(nil), in...), '\n')
	}
	return in
}

// readers are the ways a body can hand out its bytes.
var readers = []struct {
	name string
	wrap func(io.Reader) io.Reader
}{
	{"whole", func(r io.Reader) io.Reader { return r }},
	{"one byte", iotest.OneByteReader},
	{"half", iotest.HalfReader},
	{"data with EOF", iotest.DataErrReader},
}

func readTerminated(t *testing.T, in []byte, wrap func(io.Reader) io.Reader) []byte {
	t.Helper()
	got, err := io.ReadAll(openaiwire.Terminate(io.NopCloser(wrap(bytes.NewReader(in)))))
	if err != nil {
		t.Fatalf("ReadAll(Terminate(%q)) error = %v", in, err)
	}
	return got
}

func TestTerminate(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"data: [DONE]\n", "data: [DONE]\n\n"},
		{"data: [DONE]\n\n", "data: [DONE]\n\n"},
		{"data: [DO", "data: [DO"},
		{"\n", "\n\n"},
		{"a\r\n", "a\r\n\n"},
		{"data: a\n\ndata: b\n", "data: a\n\ndata: b\n\n"},
	}
	for _, tt := range tests {
		for _, r := range readers {
			t.Run(r.name+" "+tt.in, func(t *testing.T) {
				if got := readTerminated(t, []byte(tt.in), r.wrap); string(got) != tt.want {
					t.Errorf("Terminate(%q) read = %q; want %q", tt.in, got, tt.want)
				}
			})
		}
	}
}

// FuzzTerminate: however the body hands out its bytes, Terminate passes
// them through and adds a newline only after a complete line without its
// blank line.
func FuzzTerminate(f *testing.F) {
	f.Add([]byte("data: [DONE]\n"))
	f.Add([]byte("data: a\n\n: c\n\ndata: b"))
	f.Add([]byte("\n\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		want := terminated(in)
		for _, r := range readers {
			if got := readTerminated(t, in, r.wrap); !bytes.Equal(got, want) {
				t.Fatalf("Terminate(%q) read %s = %q; want %q", in, r.name, got, want)
			}
		}
	})
}
