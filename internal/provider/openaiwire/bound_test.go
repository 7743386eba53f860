package openaiwire_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaiwire"
	"github.com/turnstream/turnstream/internal/provider/providertest"
)

// decode reads in through BoundSSE(l) and openai-go's decoder, as
// Response.Events does, and returns the events' data and the error.
func decode(in io.Reader, l provider.Limits) ([]string, error) {
	dec := ssestream.NewDecoder(&http.Response{
		Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body:   openaiwire.BoundSSE(openaiwire.Terminate(io.NopCloser(in)), l),
	})
	var out []string
	for dec.Next() {
		out = append(out, string(bytes.TrimSuffix(dec.Event().Data, []byte("\n"))))
	}
	return out, dec.Err()
}

// reasonOf is err's RESPONSE_TOO_LARGE reason, "" for nil; anything else
// is reported.
func reasonOf(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var f *provider.Failure
	if !errors.As(err, &f) || f.Class != provider.ClassResponseTooLarge {
		t.Fatalf("error = %v; want a RESPONSE_TOO_LARGE *provider.Failure", err)
	}
	return f.Reason
}

func TestBoundSSE(t *testing.T) {
	small := provider.Limits{MaxLineBytes: 16, MaxEventBytes: 32, MaxStreamBytes: 1 << 10}
	line16 := "data: " + strings.Repeat("a", 10) // 16 bytes
	tests := []struct {
		name   string
		in     string
		limits provider.Limits
		want   []string
		reason string
	}{
		{name: "lines and events within", in: line16 + "\n" + line16 + "\n\n" + line16 + "\n\n", limits: small,
			want: []string{"aaaaaaaaaa\naaaaaaaaaa", "aaaaaaaaaa"}},
		{name: "a line one byte over", in: line16 + "a\n\n", limits: small, reason: provider.LimitLineBytes},
		{name: "a line over, without a newline", in: "data: " + strings.Repeat("a", 100), limits: small, reason: provider.LimitLineBytes},
		{name: "events before the long line are dispatched", in: "data: x\n\n" + line16 + "a\n\n", limits: small,
			want: []string{"x"}, reason: provider.LimitLineBytes},
		// Two 16-byte lines make a 32-byte event; a third line takes it
		// over, and the event is never dispatched.
		{name: "an event over", in: line16 + "\n" + line16 + "\ndata: x\n\n", limits: small, reason: provider.LimitEventBytes},
		{name: "an event of many short lines", in: strings.Repeat("data: a\n", 10) + "\n", limits: small, reason: provider.LimitEventBytes},
		// CRs count, the blank line's toward the event it ends.
		{name: "a CRLF blank line ends an event", in: line16 + "\r\n\r\n" + line16 + "\r\n\r\n", limits: provider.Limits{MaxLineBytes: 17, MaxEventBytes: 18, MaxStreamBytes: 1 << 10},
			want: []string{"aaaaaaaaaa", "aaaaaaaaaa"}},
		{name: "a CRLF blank line's CR is the event's", in: line16 + "\r\n\r\n", limits: provider.Limits{MaxLineBytes: 17, MaxEventBytes: 17, MaxStreamBytes: 1 << 10},
			reason: provider.LimitEventBytes},
		{name: "a lone CR is not a line end", in: strings.Repeat("data: a\r", 3) + "\n\n", limits: small, reason: provider.LimitLineBytes},
		{name: "comments count toward their event", in: ": " + strings.Repeat("c", 16) + "\n" + line16 + "\n\n", limits: provider.Limits{MaxLineBytes: 20, MaxEventBytes: 32, MaxStreamBytes: 1 << 10},
			reason: provider.LimitEventBytes},
		{name: "comments between events do not add up", in: strings.Repeat(": ping\n\n", 100) + "data: x\n\n", limits: provider.Limits{MaxLineBytes: 16, MaxEventBytes: 32, MaxStreamBytes: 1 << 20},
			want: []string{"x"}},
		// 113 events of 9 bytes fit 1 KiB; the 114th is cut short.
		{name: "the stream over", in: strings.Repeat("data: x\n\n", 200), limits: small, want: strings.Fields(strings.Repeat("x ", 113)), reason: provider.LimitStreamBytes},
		{name: "zero limits are the defaults", in: "data: " + strings.Repeat("a", 256<<10) + "\n\n", reason: provider.LimitLineBytes},
		{name: "the default line fits", in: "data: " + strings.Repeat("a", 256<<10-6) + "\n\n", want: []string{strings.Repeat("a", 256<<10-6)}},
	}
	for _, tt := range tests {
		for _, r := range readers {
			t.Run(r.name+"/"+tt.name, func(t *testing.T) {
				got, err := decode(r.wrap(strings.NewReader(tt.in)), tt.limits)
				if reason := reasonOf(t, err); reason != tt.reason {
					t.Errorf("decode() error = %v; want reason %q", err, tt.reason)
				}
				if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
					t.Errorf("decode() events = %d %.80q; want %d %.80q", len(got), got, len(tt.want), tt.want)
				}
			})
		}
	}
}

// source hands out n bytes of a repeated pattern and counts what it gave.
type source struct {
	pattern []byte
	n, read int64
}

func (s *source) Read(p []byte) (int, error) {
	if s.read >= s.n {
		return 0, io.EOF
	}
	k := 0
	for k < len(p) && s.read < s.n {
		c := copy(p[k:min(len(p), k+int(s.n-s.read))], s.pattern[s.read%int64(len(s.pattern)):])
		k += c
		s.read += int64(c)
	}
	return k, nil
}

// TestBoundSSEEndless streams 64 MiB through the decoder with 1 MiB limits:
// the limit's failure arrives having read only a few MiB, whatever the
// flood.
func TestBoundSSEEndless(t *testing.T) {
	const MiB = 1 << 20
	l := provider.Limits{MaxLineBytes: MiB, MaxEventBytes: MiB}
	tests := []struct {
		name    string
		pattern string
		reason  string
	}{
		{"one data line without a newline", "data: " + strings.Repeat("x", 4090), provider.LimitLineBytes},
		{"data lines without a blank line", "data: " + strings.Repeat("x", 4089) + "\n", provider.LimitEventBytes},
		{"comment lines without a blank line", ": " + strings.Repeat("x", 4093) + "\n", provider.LimitEventBytes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &source{pattern: []byte(tt.pattern), n: 64 * MiB}
			events, err := decode(src, l)
			if reason := reasonOf(t, err); reason != tt.reason || len(events) != 0 {
				t.Fatalf("decode() = %d events, %v; want none and reason %q", len(events), err, tt.reason)
			}
			// The scanner's buffer doubles up to twice the limit: what it
			// asked for is bounded by that, not by the flood.
			if src.read > 3*MiB {
				t.Errorf("read %d bytes of the flood; want at most 3 MiB", src.read)
			}
			t.Logf("read %d bytes of a 64 MiB flood before failing", src.read)
		})
	}
}

// checkBounded verifies what a BoundSSE reader handed out of in: a prefix
// of in; within the limits (no line, event or stream over); whole unless
// it failed, and failed only when in is over a limit, with that limit.
func checkBounded(t *testing.T, in, out []byte, err error, l provider.Limits) {
	t.Helper()
	if !bytes.HasPrefix(in, out) {
		t.Fatalf("read %q; want a prefix of %q", out, in)
	}
	if len(out) > l.MaxStreamBytes {
		t.Fatalf("read %d bytes; want at most MaxStreamBytes %d", len(out), l.MaxStreamBytes)
	}
	over := ""
	line, event := 0, 0
	for i, c := range in {
		if i == l.MaxStreamBytes {
			over = provider.LimitStreamBytes
			break
		}
		if c != '\n' {
			line++
			event++
		} else {
			if line == 0 || line == 1 && in[i-1] == '\r' {
				event = 0
			}
			line = 0
		}
		if i < len(out) && (line > l.MaxLineBytes || event > l.MaxEventBytes) {
			t.Fatalf("read %q: a line of %d or an event of %d bytes, over %d/%d", out, line, event, l.MaxLineBytes, l.MaxEventBytes)
		}
		if line > l.MaxLineBytes {
			over = provider.LimitLineBytes
			break
		}
		if event > l.MaxEventBytes {
			over = provider.LimitEventBytes
			break
		}
	}
	reason := reasonOf(t, err)
	if reason != over {
		t.Fatalf("BoundSSE(%q) error reason %q; want %q", in, reason, over)
	}
	if over == "" && !bytes.Equal(out, in) {
		t.Fatalf("BoundSSE(%q) read %q; want all of it", in, out)
	}
}

// FuzzBoundSSE: however the body hands out its bytes, a BoundSSE reader
// never hands on a line, an event or a stream over its limit, fails
// exactly when the input is over one, with its name, and never panics;
// openai-go's decoder above it never dispatches an event over the limit.
func FuzzBoundSSE(f *testing.F) {
	f.Add([]byte("data: a\n\ndata: b\r\n\r\n: c\n"), uint8(8), uint8(16), uint16(64))
	f.Add([]byte("data: "+strings.Repeat("x", 40)), uint8(10), uint8(20), uint16(1000))
	f.Add([]byte(strings.Repeat("data: x\n", 20)), uint8(10), uint8(20), uint16(1000))
	f.Add([]byte("\r\n\r\r\n\n\n"), uint8(1), uint8(1), uint16(3))
	f.Fuzz(func(t *testing.T, in []byte, line, event uint8, stream uint16) {
		l := provider.Limits{MaxLineBytes: int(line) + 1, MaxEventBytes: int(event) + 1, MaxStreamBytes: int(stream) + 1}
		for _, r := range readers {
			out, err := io.ReadAll(openaiwire.BoundSSE(io.NopCloser(r.wrap(bytes.NewReader(in))), l))
			checkBounded(t, in, out, err, l)
		}
		events, _ := decode(bytes.NewReader(in), l)
		for _, ev := range events {
			if len(ev) > l.MaxEventBytes {
				t.Fatalf("decoder dispatched an event of %d bytes; limit %d", len(ev), l.MaxEventBytes)
			}
		}
	})
}

// countingTransport counts the response body bytes its client read.
type countingTransport struct{ read atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(r)
	if res != nil {
		res.Body = &countingBody{ReadCloser: res.Body, n: &c.read}
	}
	return res, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// TestPostErrorBodyBounded: an HTTP error body is read no further than
// MaxEventBytes (and one byte to tell it is longer); a longer one is
// classified by its status alone, one within the limit by its error object
// (here insufficient_quota: QUOTA whatever the status).
func TestPostErrorBodyBounded(t *testing.T) {
	const limit = 64 << 10
	tests := []struct {
		name   string
		status int
		size   int
		class  provider.Class
	}{
		{"a huge 500 body", http.StatusInternalServerError, 8 << 20, provider.ClassServer},
		{"a huge 401 body", http.StatusUnauthorized, 8 << 20, provider.ClassAuth},
		{"a body one byte over", http.StatusUnauthorized, limit + 1, provider.ClassAuth},
		{"a body at the limit is parsed", http.StatusUnauthorized, limit, provider.ClassQuota},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const head, tail = `{"error":{"code":"insufficient_quota","message":"`, `"}}`
			body := head + strings.Repeat("x", tt.size-len(head)-len(tail)) + tail
			srv, _ := providertest.Serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				io.WriteString(w, body) //nolint:errcheck // the client hangs up
			})
			tr := &countingTransport{}
			c := newClient(t, openaiwire.Options{AdapterOptions: provider.AdapterOptions{BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Transport: tr}}})
			ctx := provider.WithLimits(t.Context(), provider.Limits{MaxEventBytes: limit})
			res, err := c.Post(ctx, "chat/completions", []byte(`{}`))
			if res != nil {
				res.Close()
			}
			f := provider.AsFailure(err)
			if f == nil || f.Class != tt.class || f.Status != tt.status {
				t.Fatalf("Post() = %v; want %s with HTTP %d", err, tt.class, tt.status)
			}
			if n := tr.read.Load(); n > limit+1 {
				t.Errorf("read %d bytes of the error body; want at most %d", n, limit+1)
			}
		})
	}
}
