package redact_test

import (
	"fmt"

	"github.com/turnstream/turnstream/internal/redact"
)

func ExampleRedactJSON() {
	args := `{"command": "curl -H \"Authorization: Bearer 0a1b2c3d4e5f6a7b8c9d\" https://api.example.com", "password": 12345}`
	out, redacted := redact.RedactJSON(args)
	fmt.Println(out)
	fmt.Println(redacted)
	// Output:
	// {"command": "curl -H \"Authorization: Bearer [REDACTED]\" https://api.example.com", "password": "[REDACTED]"}
	// true
}

func ExampleStream() {
	var s redact.Stream
	for _, delta := range []string{`{"cmd": "git clone https://bob:hun`, `ter2@git.example.com/app.git", "dir`, `": "/src"}`} {
		fmt.Printf("%q\n", s.Write(delta))
	}
	fmt.Printf("%q\n", s.Close())
	// Output:
	// "{"
	// "\"cmd\": \"git clone https://bob:[REDACTED]@git.example.com/app.git\", "
	// "\"dir\": \"/src\"}"
	// ""
}
