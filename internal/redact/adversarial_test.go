package redact

import (
	"fmt"
	"strings"
	"testing"
)

// An adversarial input is built to make a rule rescan the same bytes from
// every candidate position: many separators, headers or matches sharing one
// long value, line or tail. A hostile tool worker or model can send any of
// them; every one must cost time linear in its length.
type adversarial struct {
	name string
	json bool // JSON-shaped: exercised through RedactJSON and Stream too
	gen  func(n int) string
}

// repeatTo repeats unit to about n bytes, then appends tail. The count is
// a multiple of 8 when it can be, so that the inputs of n and n/8 bytes the
// linearity test compares end alike: a count of odd parity can change how
// the last repetitions pair up, and so the number of Redact passes.
func repeatTo(unit string, n int, tail string) string {
	k := max(1, (n-len(tail))/len(unit))
	if k >= 8 {
		k &^= 7
	}
	return strings.Repeat(unit, k) + tail
}

var adversarialInputs = []adversarial{
	{"password=", false, func(n int) string { return repeatTo("password=", n, "") }},
	{"password=/fill-in tail", false, func(n int) string { return repeatTo("password=", n, "your") }},
	{"password=/marker tail", false, func(n int) string { return repeatTo("password=", n, Marker) }},
	{"password=/markers", false, func(n int) string { return repeatTo("password="+Marker, n, "") }},
	{"password=/escaped", false, func(n int) string { return repeatTo(`password\u003d`, n, "") }},
	{"password=/scheme", false, func(n int) string { return repeatTo("password=token=Bearer ", n, "abcd1234") }},
	{"password=/blank tail", false, func(n int) string {
		return repeatTo("password=", n/2, "Bearer") + strings.Repeat(" ", n/2) + "x"
	}},
	{"token: ", false, func(n int) string { return repeatTo("token: ", n, "") }},
	{"token:/lines", false, func(n int) string { return repeatTo("token:abcd1234 \n", n, "") }},
	{`api_key="`, false, func(n int) string { return repeatTo(`api_key="`, n, "") }},
	{`api_key=\"`, false, func(n int) string { return repeatTo(`api_key=\"`, n, "") }},
	{"quotes mixed", false, func(n int) string { return repeatTo(`password="'password='\"`, n, "") }},
	{"pem headers", false, func(n int) string { return repeatTo("-----BEGIN RSA PRIVATE KEY-----\n", n, "") }},
	{"pem headers/blank tail", false, func(n int) string {
		return repeatTo("-----BEGIN PRIVATE KEY-----", n/2, "") + strings.Repeat(`\n `, n/6)
	}},
	{"pem headers/one end", false, func(n int) string {
		return repeatTo("-----BEGIN EC PRIVATE KEY-----", n, "\n-----END EC PRIVATE KEY-----")
	}},
	{"Bearer ", false, func(n int) string { return repeatTo("Bearer ", n, "") }},
	{"Authorization: Bearer ", false, func(n int) string { return "Authorization: " + repeatTo("Bearer ", n, "abcd1234") }},
	{"Basic ", false, func(n int) string { return repeatTo("Basic ", n, "YWxpY2U6czNjcjN0LXBhc3M=") }},
	{"key chars", false, func(n int) string { return repeatTo("x-api.key_", n, "=abcd1234") }},
	{"key chars/flag", false, func(n int) string { return "--" + repeatTo("api-key.", n, " abcd1234") }},
	{"dashes", false, func(n int) string { return repeatTo("-", n, "") }},
	{"--password ", false, func(n int) string { return repeatTo("--password ", n, "") }},
	{"curl -u", false, func(n int) string { return "curl" + repeatTo(" -u a:bcdefgh", n, "") }},
	{"curl -u/lines", false, func(n int) string { return repeatTo("x -u a:bcdefgh\n", n, "curl") }},
	{"url userinfo", false, func(n int) string { return repeatTo("s://u:pw", n, "@host") }},
	{"token prefixes", false, func(n int) string {
		return repeatTo("sk-ant-sk-proj-AKIAghp_github_pat_xoxb-AIzask_live_eyJ", n, "")
	}},
	{"jwt segments", false, func(n int) string { return repeatTo("eyJabcdefgh.", n, "") }},
	{`json {"password":"password":…`, true, func(n int) string { return "{" + repeatTo(`"password":`, n, `"x"}`) }},
	{`json {"password":password:…`, true, func(n int) string { return `{"password":` + repeatTo(`password:`, n, `x}`) }},
	{`json {"a":"password=…"}`, true, func(n int) string { return `{"a":"` + repeatTo("password=", n, `"}`) }},
	{`json {"a":"password\u003d…"}`, true, func(n int) string { return `{"a":"` + repeatTo(`password\u003d`, n, `"}`) }},
	{`json ["--password",…]`, true, func(n int) string { return "[" + repeatTo(`"--password",`, n, `"x"]`) }},
	{`json {"password":[[[…`, true, func(n int) string { return `{"password":` + repeatTo("[", n, "") }},
}

// streamFrags cuts s into fragments of 16 bytes, as a provider streams.
func streamFrags(s string) []string {
	var frags []string
	for i := 0; i < len(s); i += 16 {
		frags = append(frags, s[i:min(i+16, len(s))])
	}
	return frags
}

// BenchmarkAdversarial runs every adversarial input at 128 KiB and 1 MiB
// through Redact, and the JSON-shaped ones through RedactJSON and a Stream.
func BenchmarkAdversarial(b *testing.B) {
	for _, size := range []int{128 << 10, 1 << 20} {
		for _, adv := range adversarialInputs {
			in := adv.gen(size)
			name := fmt.Sprintf("%dKiB/%s", size>>10, adv.name)
			b.Run(name+"/Redact", func(b *testing.B) {
				b.SetBytes(int64(len(in)))
				for b.Loop() {
					Redact(in)
				}
			})
			if !adv.json {
				continue
			}
			b.Run(name+"/RedactJSON", func(b *testing.B) {
				b.SetBytes(int64(len(in)))
				for b.Loop() {
					RedactJSON(in)
				}
			})
			frags := streamFrags(in)
			b.Run(name+"/Stream", func(b *testing.B) {
				b.SetBytes(int64(len(in)))
				for b.Loop() {
					var s Stream
					for _, f := range frags {
						s.Write(f)
					}
					s.Close()
				}
			})
		}
	}
}
