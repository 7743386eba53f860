package schemas_test

import (
	"bytes"
	"io/fs"
	"strconv"
	"testing"

	"github.com/turnstream/turnstream/internal/schemagen"
	"github.com/turnstream/turnstream/schemas"
)

// TestGeneratedSchemasAreCurrent fails when a generated file of schemas/
// is not what the generator makes of the Go types now: run
// go generate ./schemas and commit the result.
func TestGeneratedSchemasAreCurrent(t *testing.T) {
	files, err := schemagen.Generate("..")
	if err != nil {
		t.Fatalf("schemagen.Generate() = %v", err)
	}
	if len(files) == 0 {
		t.Fatal("schemagen.Generate() made no files")
	}
	for name, want := range files {
		got, err := fs.ReadFile(schemas.FS, name)
		if err != nil {
			t.Errorf("%s: %v; run go generate ./schemas", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("schemas/%s differs from what its Go types generate; run go generate ./schemas\n%s", name, firstDifference(got, want))
		}
	}
}

// firstDifference shows the first line where got and want differ.
func firstDifference(got, want []byte) string {
	g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := range max(len(g), len(w)) {
		var gl, wl []byte
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if !bytes.Equal(gl, wl) {
			return "line " + strconv.Itoa(i+1) + ":\n  have " + string(gl) + "\n  want " + string(wl)
		}
	}
	return ""
}
