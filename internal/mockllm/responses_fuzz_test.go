package mockllm_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/turnstream/turnstream/internal/mockllm"
)

// FuzzResponsesRequest posts arbitrary bodies to /v1/responses with the
// default script: the server never panics, rejects what it cannot parse
// with 400 and records nothing for it, and answers the rest.
func FuzzResponsesRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","stream":true,"input":[{"role":"user","content":"hi"}],"tools":[{"type":"function","name":"f","parameters":{"type":"object","properties":{"x":{"type":"string"}}}}]}`))
	f.Add([]byte(`{"input":"plain","stream":false}`))
	f.Add([]byte(`{"input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"r"}]}]}`))
	f.Add([]byte(`{"input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}],"tools":[{"type":"web_search"}]}`))
	f.Add([]byte(`{"input":null,"tools":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		s := mockllm.New(mockllm.Default(mockllm.DefaultOptions{Split: 2}))
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/v1/responses", bytes.NewReader(body))
		s.ServeHTTP(rec, req)
		reqs := s.Requests()
		switch rec.Code {
		case http.StatusBadRequest:
			if len(reqs) != 0 {
				t.Fatalf("rejected body %q recorded", body)
			}
		case http.StatusOK:
			if len(reqs) != 1 || !bytes.Equal(reqs[0].Body, body) {
				t.Fatalf("accepted body %q not recorded verbatim", body)
			}
		default:
			t.Fatalf("POST %q = %d; want 200 or 400", body, rec.Code)
		}
	})
}
