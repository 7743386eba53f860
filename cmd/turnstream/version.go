package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	buildversion "github.com/turnstream/turnstream/internal/version"
)

// version is the release this binary is, set at build time:
//
//	go build -ldflags "-X main.version=v1.2.3" ./cmd/turnstream
//
// Left empty, versionString reads it from the build info.
var version string

// versionString is version, else the module version the build info holds
// (`go install ...@v1.2.3`), else "devel" with the VCS revision the build
// stamped, if any (internal/version).
func versionString() string { return buildversion.String(version) }

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "turnstream %s (%s %s/%s)\n", versionString(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
