// Command gen rewrites the generated files of schemas/ (see
// internal/schemagen): go run ./schemas/gen, or go generate ./schemas.
// With -check it writes nothing and fails if a file differs.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/turnstream/turnstream/internal/schemagen"
)

func main() {
	check := flag.Bool("check", false, "write nothing; exit 1 if a generated file differs")
	flag.Parse()
	if err := run(*check); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(check bool) error {
	root, err := schemagen.Root(".")
	if err != nil {
		return err
	}
	files, err := schemagen.Generate(root)
	if err != nil {
		return err
	}
	stale := 0
	for _, name := range slices.Sorted(maps.Keys(files)) {
		path := filepath.Join(root, "schemas", name)
		old, err := os.ReadFile(path)
		if err == nil && bytes.Equal(old, files[name]) {
			continue
		}
		if check {
			fmt.Fprintf(os.Stderr, "%s is stale\n", path)
			stale++
			continue
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			return err
		}
		fmt.Printf("wrote %s\n", path)
	}
	if stale > 0 {
		return fmt.Errorf("%d generated schema files differ; run go generate ./schemas", stale)
	}
	return nil
}
