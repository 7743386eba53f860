// Package version says which release a binary is: the version linked into
// it at build time, else the one its build info holds (`go install
// ...@v1.2.3`), else "devel" with the VCS revision the build stamped. It
// also writes a version in the strict SemVer form NATS services must
// announce (Semver). It reads only the binary's build info: no flags, no
// environment, no network.
package version
