package version_test

import (
	"testing"

	"github.com/turnstream/turnstream/internal/version"
)

func TestString(t *testing.T) {
	if got := version.String("v1.2.3"); got != "v1.2.3" {
		t.Errorf(`String("v1.2.3") = %q; want "v1.2.3"`, got)
	}
	if got := version.String(""); got == "" {
		t.Error(`String("") = ""; want the build info's version, devel or unknown`)
	}
}

func TestSemver(t *testing.T) {
	tests := []struct{ in, want string }{
		{"v1.2.3", "1.2.3"},
		{"1.2.3", "1.2.3"},
		{"v1.2.3-rc.1+build.5", "1.2.3-rc.1+build.5"},
		{"v0.0.0-20240102030405-0123456789ab", "0.0.0-20240102030405-0123456789ab"},
		{"v2.0.0+incompatible", "2.0.0+incompatible"},
		{"devel", "0.0.0+devel"},
		{"devel-0123456789ab-dirty", "0.0.0+devel-0123456789ab-dirty"},
		{"unknown", "0.0.0+unknown"},
		{"v1.2", "0.0.0+v1.2"},
		{"release 7/b..c", "0.0.0+release-7-b.c"},
		{"", "0.0.0"},
		{"...", "0.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := version.Semver(tt.in); got != tt.want {
				t.Errorf("Semver(%q) = %q; want %q", tt.in, got, tt.want)
			}
		})
	}
}
