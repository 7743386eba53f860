package mcptools

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Source is one MCP server whose tools are served: a command run as a
// child process that speaks MCP on its stdin and stdout (the stdio
// transport), or the URL of a streamable HTTP endpoint. Exactly one of
// Command and URL is set.
type Source struct {
	// Name names the server in logs and errors. Default: the command's
	// base name, or the URL's host; Start makes default names unique by
	// appending "-2", "-3", ... Names given explicitly must be unique.
	Name string `yaml:"name"`
	// Command is the executable of a stdio server, looked up in PATH when
	// it holds no slash.
	Command string `yaml:"command"`
	// Args are the command's arguments.
	Args []string `yaml:"args"`
	// Env is added to the environment the command inherits from the tool
	// worker (a key given here wins).
	Env map[string]string `yaml:"env"`
	// URL is the endpoint of a streamable HTTP server (http or https).
	URL string `yaml:"url"`
	// Prefix is put before the name of each of the server's tools to make
	// its turnstream tool name ("fs_" serves the tool read_file as
	// fs_read_file). Default: none. At most 63 characters of
	// [A-Za-z0-9_-].
	Prefix string `yaml:"prefix"`
}

// Config is the MCP config file read by LoadConfig:
//
//	servers:
//	  - name: files
//	    command: ./mcp-files
//	    args: [--root, /srv/data]
//	    env: {LOG_LEVEL: warn}
//	    prefix: files_
//	  - url: https://tools.example.com/mcp
type Config struct {
	// Servers are the sources whose tools are served, in order: a tool
	// whose name an earlier server took is refused.
	Servers []Source `yaml:"servers"`
}

var prefixRE = regexp.MustCompile(`^[A-Za-z0-9_-]{0,63}$`)

// Validate checks s as given (before its default name).
func (s Source) Validate() error {
	switch {
	case s.Command == "" && s.URL == "":
		return fmt.Errorf("%w: a command or a url is required", ErrInvalidSource)
	case s.Command != "" && s.URL != "":
		return fmt.Errorf("%w: command and url are exclusive", ErrInvalidSource)
	case s.URL != "" && (len(s.Args) > 0 || len(s.Env) > 0):
		return fmt.Errorf("%w: args and env are for a command, not a url", ErrInvalidSource)
	case !prefixRE.MatchString(s.Prefix):
		return fmt.Errorf("%w: prefix %q must be at most 63 characters of [A-Za-z0-9_-]", ErrInvalidSource, s.Prefix)
	}
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil {
			return fmt.Errorf("%w: url: %v", ErrInvalidSource, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%w: url %q must be http:// or https:// with a host", ErrInvalidSource, s.URL)
		}
	}
	for k := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("%w: env key %q", ErrInvalidSource, k)
		}
	}
	return nil
}

// defaultName is the name of s when it gives none.
func (s Source) defaultName() string {
	if s.Command != "" {
		return filepath.Base(s.Command)
	}
	if u, err := url.Parse(s.URL); err == nil && u.Host != "" {
		return u.Host
	}
	return s.URL
}

// named gives each source its name: the one given, or a default made
// unique. Given names must be unique.
func named(sources []Source) ([]Source, error) {
	out := make([]Source, len(sources))
	taken := map[string]bool{}
	for _, s := range sources {
		if s.Name == "" {
			continue
		}
		if taken[s.Name] {
			return nil, fmt.Errorf("%w: two servers are named %q", ErrInvalidSource, s.Name)
		}
		taken[s.Name] = true
	}
	for i, s := range sources {
		if s.Name == "" {
			base := s.defaultName()
			s.Name = base
			for n := 2; taken[s.Name]; n++ {
				s.Name = base + "-" + strconv.Itoa(n)
			}
			taken[s.Name] = true
		}
		out[i] = s
	}
	return out, nil
}

// ParseSource reads the value of a --mcp flag, in one of three forms:
//
//	cmd:COMMAND [ARG...]    a stdio server; the words are split on white space, with no quoting
//	http(s)://HOST/PATH     a streamable HTTP server
//	{YAML mapping}          any source, with the fields of a config file's server:
//	                        {name: files, command: ./mcp-files, args: [--root, "/my data"], prefix: files_}
func ParseSource(spec string) (Source, error) {
	spec = strings.TrimSpace(spec)
	var s Source
	switch {
	case strings.HasPrefix(spec, "cmd:"):
		words := strings.Fields(strings.TrimPrefix(spec, "cmd:"))
		if len(words) == 0 {
			return Source{}, fmt.Errorf("%w: cmd: needs a command (in %q)", ErrInvalidSource, spec)
		}
		s = Source{Command: words[0], Args: words[1:]}
	case strings.HasPrefix(spec, "http://"), strings.HasPrefix(spec, "https://"):
		s = Source{URL: spec}
	case strings.HasPrefix(spec, "{"):
		if err := decodeStrict([]byte(spec), &s); err != nil {
			return Source{}, fmt.Errorf("%w: %v (in %q)", ErrInvalidSource, err, spec)
		}
	default:
		return Source{}, fmt.Errorf("%w: want cmd:COMMAND [ARG...], an http(s) URL, or a {...} mapping of a config file's server (in %q)", ErrInvalidSource, spec)
	}
	if err := s.Validate(); err != nil {
		return Source{}, fmt.Errorf("%w (in %q)", err, spec)
	}
	return s, nil
}

// LoadConfig reads an MCP config file (see Config) and returns its
// servers, each checked with Validate. Unknown keys are errors.
func LoadConfig(path string) ([]Source, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mcptools: %w", err)
	}
	var c Config
	if err := decodeStrict(data, &c); err != nil {
		return nil, fmt.Errorf("%w: %v (in %s)", ErrInvalidSource, err, path)
	}
	if len(c.Servers) == 0 {
		return nil, fmt.Errorf("%w: no servers (in %s)", ErrInvalidSource, path)
	}
	for i, s := range c.Servers {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("%w (in %s, servers[%d])", err, path, i)
		}
	}
	return c.Servers, nil
}

func decodeStrict(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}
