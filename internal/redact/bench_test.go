package redact

import (
	"strings"
	"testing"
)

// benchArgs is a write_file call of about 16 KiB with one credential.
var benchArgs = `{"path": "deploy/config.yaml", "content": "` +
	strings.Repeat(`server:\n  host: 0.0.0.0\n  port: 8080\n  max_tokens: 4096\n`, 300) +
	`db:\n  password: ` + keyPassword + `\n", "mode": 420}`

func BenchmarkRedactJSON(b *testing.B) {
	b.SetBytes(int64(len(benchArgs)))
	for b.Loop() {
		RedactJSON(benchArgs)
	}
}

func BenchmarkStream(b *testing.B) {
	b.SetBytes(int64(len(benchArgs)))
	for b.Loop() {
		var s Stream
		for i := 0; i < len(benchArgs); i += 16 {
			s.Write(benchArgs[i:min(i+16, len(benchArgs))])
		}
		s.Close()
	}
}
