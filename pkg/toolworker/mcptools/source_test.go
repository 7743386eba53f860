package mcptools_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/turnstream/turnstream/pkg/toolworker/mcptools"
)

func TestParseSource(t *testing.T) {
	tests := []struct {
		spec    string
		want    mcptools.Source
		wantErr bool
	}{
		{spec: "cmd:./server --flag  x", want: mcptools.Source{Command: "./server", Args: []string{"--flag", "x"}}},
		{spec: "cmd:npx", want: mcptools.Source{Command: "npx", Args: []string{}}},
		{spec: "https://tools.example.com/mcp?x=1", want: mcptools.Source{URL: "https://tools.example.com/mcp?x=1"}},
		{spec: "http://127.0.0.1:8080/mcp", want: mcptools.Source{URL: "http://127.0.0.1:8080/mcp"}},
		{
			spec: `{name: files, command: ./mcp-files, args: [--root, "/my data"], env: {A: b}, prefix: files_}`,
			want: mcptools.Source{Name: "files", Command: "./mcp-files", Args: []string{"--root", "/my data"}, Env: map[string]string{"A": "b"}, Prefix: "files_"},
		},
		{spec: `{url: "https://h/mcp", prefix: web_}`, want: mcptools.Source{URL: "https://h/mcp", Prefix: "web_"}},
		{spec: "cmd:", wantErr: true},
		{spec: "./server", wantErr: true},
		{spec: "ftp://h/mcp", wantErr: true},
		{spec: "https://", wantErr: true},
		{spec: `{command: a, url: "https://h"}`, wantErr: true},
		{spec: `{url: "https://h", args: [x]}`, wantErr: true},
		{spec: `{command: a, prefix: "a.b"}`, wantErr: true},
		{spec: `{command: a, unknown: 1}`, wantErr: true},
		{spec: `{}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := mcptools.ParseSource(tt.spec)
			if tt.wantErr {
				if !errors.Is(err, mcptools.ErrInvalidSource) {
					t.Errorf("ParseSource(%q) = %+v, %v; want ErrInvalidSource", tt.spec, got, err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseSource(%q) = %+v, %v; want %+v", tt.spec, got, err, tt.want)
			}
		})
	}
}

func TestLoadConfig(t *testing.T) {
	tests := []struct {
		name, text string
		want       []mcptools.Source
		wantErr    bool
	}{
		{
			name: "servers",
			text: "servers:\n  - name: files\n    command: ./mcp-files\n    args: [--root, /srv]\n    env: {LOG: warn}\n    prefix: files_\n  - url: https://tools.example.com/mcp\n",
			want: []mcptools.Source{
				{Name: "files", Command: "./mcp-files", Args: []string{"--root", "/srv"}, Env: map[string]string{"LOG": "warn"}, Prefix: "files_"},
				{URL: "https://tools.example.com/mcp"},
			},
		},
		{name: "no servers", text: "servers: []\n", wantErr: true},
		{name: "unknown key", text: "servers:\n  - command: a\n    cwd: /\n", wantErr: true},
		{name: "invalid server", text: "servers:\n  - name: x\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mcp.yaml")
			if err := os.WriteFile(path, []byte(tt.text), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := mcptools.LoadConfig(path)
			if tt.wantErr {
				if !errors.Is(err, mcptools.ErrInvalidSource) {
					t.Errorf("LoadConfig() = %+v, %v; want ErrInvalidSource", got, err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("LoadConfig() = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
