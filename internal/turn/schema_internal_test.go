package turn

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestCompileCanonicalLoadsNothing compiles documents with foreign
// references past the pre-scan that refuses them: the compiler itself has
// no loader, so it refuses them too, without opening the FIFO (the test
// completing is the assertion) or reading the file.
func TestCompileCanonicalLoadsNothing(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	file := filepath.Join(dir, "s.json")
	if err := os.WriteFile(file, []byte(`{"description":"CANARY"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{
		`{"$ref":"file://` + fifo + `"}`,
		`{"$ref":"file://` + file + `"}`,
		`{"$id":"file://` + dir + `/","properties":{"a":{"$ref":"fifo"}}}`,
		`{"$id":"file://` + dir + `/","properties":{"a":{"$ref":"s.json"}}}`,
		`{"$ref":"http://127.0.0.1:9/s.json"}`,
		`{"$schema":"file://` + fifo + `"}`,
		`{"properties":{"a":{"$id":"x/","$schema":"file://` + fifo + `"}}}`,
	} {
		ts, problem := compileCanonical([]byte(doc), DefaultSchemaLimits)
		if ts != nil || problem == nil || problem.reason != SchemaReasonForeignRef {
			t.Errorf("compileCanonical(%s) = %v, %+v; want a foreign reference", doc, ts, problem)
			continue
		}
		if strings.Contains(problem.detail, "CANARY") {
			t.Errorf("compileCanonical(%s): %q holds the file's content", doc, problem.detail)
		}
	}
}
