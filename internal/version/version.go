package version

import (
	"regexp"
	"runtime/debug"
	"strings"
)

// String is linked when it is set (cmd/turnstream links main.version with
// -ldflags "-X main.version=v1.2.3"), else the main module's version in the
// build info, else "devel" followed by the VCS revision the build stamped
// ("devel-0123456789ab", "-dirty" when the tree was modified), else
// "unknown" for a binary without build info.
//
// In a tool author's own binary the main module is the author's, so its
// version is theirs.
func String(linked string) string {
	if linked != "" {
		return linked
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	v := "devel"
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev != "" {
		v += "-" + rev[:min(12, len(rev))] + dirty
	}
	return v
}

// semverRE is SemVer 2.0.0 (semver.org's suggested expression, the one
// nats.go/micro checks a service's version with).
var semverRE = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// Semver writes v as SemVer, which a NATS service must announce: a Go
// module version loses its "v" ("v1.2.3" is "1.2.3", a pseudo-version
// "v0.0.0-20240102030405-0123456789ab" stays one); anything else becomes
// the build metadata of 0.0.0 ("devel-0123456789ab-dirty" is
// "0.0.0+devel-0123456789ab-dirty"), its characters outside [0-9A-Za-z-.]
// written "-".
func Semver(v string) string {
	if s := strings.TrimPrefix(v, "v"); semverRE.MatchString(s) {
		return s
	}
	meta := strings.Map(func(r rune) rune {
		switch {
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '-', r == '.':
			return r
		}
		return '-'
	}, v)
	var ids []string
	for id := range strings.SplitSeq(meta, ".") {
		if id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return "0.0.0"
	}
	return "0.0.0+" + strings.Join(ids, ".")
}
