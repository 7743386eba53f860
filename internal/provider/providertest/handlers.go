package providertest

import (
	"io"
	"net/http"
	"time"
)

// setHeaders sets the header pairs kv (name, value, name, value...).
func setHeaders(w http.ResponseWriter, kv []string) {
	for i := 0; i+1 < len(kv); i += 2 {
		w.Header().Set(kv[i], kv[i+1])
	}
}

// SSE answers every request with body as an event stream, byte for byte.
// Content-Type is text/event-stream unless the header pairs kv, set after
// it, say otherwise.
func SSE(body []byte, kv ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		setHeaders(w, kv)
		w.WriteHeader(http.StatusOK)
		w.Write(body) //nolint:errcheck // the client may be gone
	}
}

// Echo answers every request with its own body as an event stream, byte
// for byte, with the header pairs kv: what an adapter sends is what it
// reads, so a fuzz input can be sent as the request body.
func Echo(kv ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		SSE(body, kv...)(w, r)
	}
}

// Reply answers with status, the header pairs kv, Content-Type
// contentType unless it is empty, and body.
func Reply(status int, contentType, body string, kv ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		setHeaders(w, kv)
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		io.WriteString(w, body) //nolint:errcheck // the client may be gone
	}
}

// KeepAlive answers with an event stream, with the header pairs kv, that
// sends only a keep-alive comment every tick until the client goes.
func KeepAlive(every time.Duration, kv ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		setHeaders(w, kv)
		w.WriteHeader(http.StatusOK)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
		}
	}
}

// Stall answers 200 with Content-Type contentType and prefix, flushed, then
// sends nothing more until the client goes.
func Stall(contentType, prefix string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, prefix) //nolint:errcheck // the client may be gone
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

// Abort answers 200 with Content-Type contentType, the header pairs kv and
// prefix, flushed, then cuts the connection mid-body.
func Abort(contentType, prefix string, kv ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		setHeaders(w, kv)
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, prefix) //nolint:errcheck // the client may be gone
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
}
