package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestProbe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"ready", []string{srv.URL + "/readyz"}, ""},
		{"one unready", []string{srv.URL + "/readyz", srv.URL + "/healthz"}, "503 Service Unavailable"},
		{"refused", []string{"--timeout", "1s", "http://127.0.0.1:1/readyz"}, "probe: "},
		{"no url", nil, "give the URLs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := dispatch(t.Context(), append([]string{"probe"}, tt.args...), &out)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("probe %q = %v; want nil", tt.args, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("probe %q = %v; want an error containing %q", tt.args, err, tt.wantErr)
			}
		})
	}
}
