package redact

import (
	"strings"
	"testing"
)

// R is the marker, short for the tables.
const R = Marker

type textCase struct {
	name string
	in   string
	want string // "" means unchanged
}

func runTextCases(t *testing.T, cases []textCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want == "" {
				want = tt.in
			}
			got, redacted := Redact(tt.in)
			if got != want {
				t.Errorf("Redact(%q) = %q; want %q", tt.in, got, want)
			}
			if redacted != (want != tt.in) {
				t.Errorf("Redact(%q) redacted = %v; want %v", tt.in, redacted, want != tt.in)
			}
			if c := Contains(tt.in); c != (want != tt.in) {
				t.Errorf("Contains(%q) = %v; want %v", tt.in, c, want != tt.in)
			}
			if again, _ := Redact(got); again != got {
				t.Errorf("Redact(Redact(%q)) = %q; want %q", tt.in, again, got)
			}
		})
	}
}

func TestRedactVendorTokens(t *testing.T) {
	runTextCases(t, []textCase{
		{"openai project key", "export OPENAI_API_KEY=" + keyOpenAI, "export OPENAI_API_KEY=" + R},
		{"openai legacy key in prose", "use " + keyOpenAILegacy + " for it", "use " + R + " for it"},
		{"openai key after escaped newline", `a\n` + keyOpenAILegacy, `a\n` + R},
		{"anthropic key", "client = Anthropic(api_key='" + keyAnthropic + "')", "client = Anthropic(api_key='" + R + "')"},
		{"aws access key id", "aws_access_key_id = " + keyAWSID, "aws_access_key_id = " + R},
		{"aws temporary key id", "id " + keyAWSTempID + ".", "id " + R + "."},
		{"github classic token", "git remote set-url origin https://" + keyGitHub + "@github.com/o/r.git", "git remote set-url origin https://" + R + "@github.com/o/r.git"},
		{"github app token", "GH " + keyGitHubApp, "GH " + R},
		{"github oauth token", keyGitHubOAuth, R},
		{"github fine-grained token", "gh auth login --with-token <<< " + keyGitHubPAT, "gh auth login --with-token <<< " + R},
		{"slack bot token", "SLACK=" + keySlack, "SLACK=" + R},
		{"google api key", "https://maps.googleapis.com/maps/api/geocode/json?address=x&key=" + keyGoogle, "https://maps.googleapis.com/maps/api/geocode/json?address=x&key=" + R},
		{"stripe live key", "stripe.api_key = \"" + keyStripe + "\"", "stripe.api_key = \"" + R + "\""},
		{"stripe restricted key", "rk " + keyStripeRK, "rk " + R},
		{"jwt", "id_token: " + keyJWT, "id_token: " + R},
		{"jwt at a sentence end", "The token is " + keyJWT + ".", "The token is " + R + "."},
		{"jwt in a cookie header", "Cookie: session=" + keyJWT + "; theme=dark", "Cookie: session=" + R + "; theme=dark"},

		{"not openai: scikit words", "pip install sk-learn-extensions-for-everyone", ""},
		{"not openai: placeholder", "OPENAI_API_KEY=sk-your-openai-api-key-here", ""},
		{"not openai: inside a word", "task-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", ""},
		{"not openai: too short", "sk-abc123", ""},
		{"not aws: too long", "AKIAIOSFODNN7EXAMPLEXX", ""},
		{"not aws: lower case", "akiaiosfodnn7example", ""},
		{"not aws: inside a word", "XAKIAIOSFODNN7EXAMPLE", ""},
		{"not github: short", "ghp_abc123", ""},
		{"not slack: no digits", "xoxb-not-a-real-token-here", ""},
		{"not google: short", "AIzaSyShort", ""},
		{"not stripe: short", "sk_live_abc", ""},
		{"not jwt: header only", "eyJhbGciOiJIUzI1NiJ9", ""},
	})
}

func TestRedactAuthorization(t *testing.T) {
	runTextCases(t, []textCase{
		{"curl bearer header", `curl -H "Authorization: Bearer ` + keyBearer + `" https://api.example.com/v1/me`, `curl -H "Authorization: Bearer ` + R + `" https://api.example.com/v1/me`},
		{"bearer lower case", "authorization: bearer " + keyBearer, "authorization: bearer " + R},
		{"bearer with jwt", "Authorization: Bearer " + keyJWT, "Authorization: Bearer " + R},
		{"basic header", `curl -H 'Authorization: Basic ` + keyBasic + `' https://x`, `curl -H 'Authorization: Basic ` + R + `' https://x`},
		{"basic unpadded", "Authorization: Basic YWxpY2U6czNjcjN0LXBhc3M", "Authorization: Basic " + R},
		{"github token scheme", `-H "Authorization: token ` + keyGitHub + `"`, `-H "Authorization: token ` + R + `"`},
		{"header without scheme", `curl -H "X-Api-Key: 9f8e7d6c5b4a" https://x`, `curl -H "X-Api-Key: ` + R + `" https://x`},
		{"curl user", "curl -u alice:s3cr3t https://x", "curl -u alice:" + R + " https://x"},
		{"curl user long flag", "curl --user 'alice:s3cr3t' https://x", "curl --user 'alice:" + R + "' https://x"},

		{"not bearer: prose", "The bearer instruments are listed below.", ""},
		{"not bearer: placeholder", "Authorization: Bearer YOUR_TOKEN_HERE", ""},
		{"not bearer: variable", `curl -H "Authorization: Bearer $GITHUB_TOKEN" https://x`, ""},
		{"not bearer: template", `curl -H "Authorization: Bearer ${TOKEN}" https://x`, ""},
		{"not basic: prose", "Basic instructions follow: install and run.", ""},
		{"not basic: base64 without colon", "Basic aGVsbG8gd29ybGQ=", ""},
		{"not curl user: docker user and group", "docker run -u 1000:1000 alpine id", ""},
		{"not curl user: variable", `curl -u "$USER:$PASS" https://x`, ""},
	})
}

func TestRedactPrivateKey(t *testing.T) {
	pem := "-----BEGIN RSA PRIVATE KEY-----\n" + keyPEMBody + "\n-----END RSA PRIVATE KEY-----\n"
	escaped := strings.ReplaceAll(pem, "\n", `\n`)
	runTextCases(t, []textCase{
		{"rsa key", pem, "-----BEGIN RSA PRIVATE KEY-----\n" + R + "\n-----END RSA PRIVATE KEY-----\n"},
		{"openssh key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----", "-----BEGIN OPENSSH PRIVATE KEY-----\n" + R + "\n-----END OPENSSH PRIVATE KEY-----"},
		{"pkcs8 key", "-----BEGIN PRIVATE KEY-----\r\nMIIEvQIBADANBg\r\n-----END PRIVATE KEY-----", "-----BEGIN PRIVATE KEY-----\r\n" + R + "\r\n-----END PRIVATE KEY-----"},
		{"escaped newlines", escaped, `-----BEGIN RSA PRIVATE KEY-----\n` + R + `\n-----END RSA PRIVATE KEY-----\n`},
		{"cut off key", "key:\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB", "key:\n-----BEGIN EC PRIVATE KEY-----\n" + R},
		{"pgp key block", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + R + "\n-----END PGP PRIVATE KEY BLOCK-----"},

		{"not a private key: certificate", "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE\n-----END CERTIFICATE-----", ""},
		{"not a private key: public key", "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0B\n-----END PUBLIC KEY-----", ""},
		{"not a private key: empty body", "-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----", ""},
	})
}

func TestRedactURLPassword(t *testing.T) {
	runTextCases(t, []textCase{
		{"git clone", "git clone https://user:pw@host/repo", "git clone https://user:" + R + "@host/repo"},
		{"postgres url", "DATABASE_URL=postgres://app:s3cr3t-P4ss@db.internal:5432/app?sslmode=require", "DATABASE_URL=postgres://app:" + R + "@db.internal:5432/app?sslmode=require"},
		{"empty user", "https://:" + keyGitHub + "@github.com/o/r", "https://:" + R + "@github.com/o/r"},
		{"redis url", "redis://default:hunter2hunter2@cache:6379/0", "redis://default:" + R + "@cache:6379/0"},
		{"ipv6 host", "mysql://root:toor@[::1]:3306/db", "mysql://root:" + R + "@[::1]:3306/db"},

		{"not a password: no colon", "ssh://git@github.com/o/r.git", ""},
		{"not a password: port", "https://example.com:8443/path?q=a@b", ""},
		{"not a password: variable", "postgres://app:${DB_PASSWORD}@db/app", ""},
		{"not a password: placeholder", "https://user:<password>@host/repo", ""},
		{"not a password: masked", "https://user:****@host/repo", ""},
		{"not a password: single char", "https://user:x@host/repo", ""},
		{"not a password: scp syntax", "git clone git@github.com:org/repo.git", ""},
	})
}

func TestRedactKeyValue(t *testing.T) {
	runTextCases(t, []textCase{
		{"env export", "export OPENAI_API_KEY=abc123def456", "export OPENAI_API_KEY=" + R},
		{"env file", "DB_HOST=db\nDB_PASSWORD=" + keyPassword + "\nDEBUG=true\n", "DB_HOST=db\nDB_PASSWORD=" + R + "\nDEBUG=true\n"},
		{"env quoted", `AWS_SECRET_ACCESS_KEY="` + keyAWSSecret + `"`, `AWS_SECRET_ACCESS_KEY="` + R + `"`},
		{"aws credentials file", "[default]\naws_access_key_id = " + keyAWSID + "\naws_secret_access_key = " + keyAWSSecret + "\n", "[default]\naws_access_key_id = " + R + "\naws_secret_access_key = " + R + "\n"},
		{"query string", "https://api.example.com/v1?api_key=0123abcd&format=json", "https://api.example.com/v1?api_key=" + R + "&format=json"},
		{"query access_token", "GET /cb?code=1&access_token=ya29.a0AfH6SMB&state=x", "GET /cb?code=1&access_token=" + R + "&state=x"},
		{"flag equals", "mysql --user=root --password=" + keyPassword + " db", "mysql --user=root --password=" + R + " db"},
		{"flag separate", "docker login -u bob --password hunter2hunter2 registry.io", "docker login -u bob --password " + R + " registry.io"},
		{"flag quoted", `vault login --token "s.AbCdEf123456"`, `vault login --token "` + R + `"`},
		{"json in text", `{"username": "bob", "password": "` + keyPassword + `"}`, `{"username": "bob", "password": "` + R + `"}`},
		{"json number in text", `{"password": 12345}`, `{"password": ` + R + `}`},
		{"escaped json in text", `{\"client_secret\": \"abcd1234\"}`, `{\"client_secret\": \"` + R + `\"}`},
		{"yaml", "db:\n  user: app\n  password: s3cr3t!\n", "db:\n  user: app\n  password: " + R + "\n"},
		{"yaml quoted", "apiKey: 'abcd1234efgh'", "apiKey: '" + R + "'"},
		{"code assignment", `client_secret = "abcd1234"`, `client_secret = "` + R + `"`},
		{"camel case", `const githubToken = "abcd1234"`, `const githubToken = "` + R + `"`},
		{"header key", "X-Auth-Token: 8c1e2f3a", "X-Auth-Token: " + R},
		{"passphrase", "passphrase=correct-horse", "passphrase=" + R},
		{"private key field", `private_key: "MIIEvQIBADANBg"`, `private_key: "` + R + `"`},
		{"authorization scheme kept", "Authorization: Token abcd1234efgh", "Authorization: Token " + R},

		{"not a secret: prose", "Please follow the password reset instructions in the email.", ""},
		{"not a secret: token count", "The token count is 5; max_tokens=4096 and token_count=12.", ""},
		{"not a secret: prose with colon", "Password: see the reset instructions below", ""},
		{"not a secret: short value", "token=x password=abc", ""},
		{"not a secret: empty value", "PASSWORD=\nTOKEN=''", ""},
		{"not a secret: variable", `export GITHUB_TOKEN=$(gh auth token) && PASSWORD=$DB_PASS`, ""},
		{"not a secret: template", `password: "{{ .Values.password }}"`, ""},
		{"not a secret: literal", `{"token": null, "password": true, "secret": "none"}`, ""},
		{"not a secret: masked", "password=********", ""},
		{"not a secret: comparison", `if password == "hunter22" {`, ""},
		{"not a secret: pagination", "next_page_token=CiAKGjBpNDd2Nmp2Zml2cXRp", ""},
		{"not a secret: key name only", "secretName: db-credentials", ""},
		{"not a secret: file path key", "token_file=/var/run/secrets/token", ""},
		{"not a secret: mid-line colon", "the token: abcd1234 was rotated", ""},
		{"not a secret: flag value is flag", "cmd --password --verbose", ""},
		{"not a secret: code call", "token = get_token()\npassword = getpass.getpass()", ""},
		{"not a secret: code lookup", `api_key = os.environ["OPENAI_API_KEY"]`, ""},
		{"not a secret: type annotation", "def login(user: str, password: str) -> bool:", ""},
	})
}

func TestIsSecretKey(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"password", true}, {"PASSWORD", true}, {"db_password", true}, {"dbPassword", true},
		{"passwd", true}, {"secret", true}, {"client_secret", true}, {"clientSecret", true},
		{"token", true}, {"access_token", true}, {"GH_TOKEN", true}, {"x-auth-token", true},
		{"api_key", true}, {"apiKey", true}, {"APIKey", true}, {"OpenAIApiKey", true}, {"apikey", true}, {"x-api-key", true},
		{"aws_secret_access_key", true}, {"AWS_ACCESS_KEY", true}, {"secret_key", true}, {"private_key", true},
		{"Authorization", true}, {"spring.datasource.password", true},
		{"max_tokens", false}, {"token_count", false}, {"tokens", false}, {"password_reset_url", false},
		{"secretName", false}, {"next_page_token", false}, {"pageToken", false}, {"cancellationToken", false},
		{"key", false}, {"public_key", false}, {"passwordless", false}, {"author", false}, {"", false},
	}
	for _, tt := range tests {
		if got := isSecretKey(tt.key); got != tt.want {
			t.Errorf("isSecretKey(%q) = %v; want %v", tt.key, got, tt.want)
		}
	}
}

func TestRedactKeepsOrdinaryText(t *testing.T) {
	for _, in := range []string{
		"",
		"hello",
		"ls -la /tmp && cat README.md",
		"The API uses bearer tokens; see docs for the token endpoint.",
		"Set max_tokens to 1024 to control the token budget.",
		"SELECT id, password_hash FROM users WHERE id = 1",
		"func Authorization(r *http.Request) string { return r.Header.Get(\"Authorization\") }",
		"https://example.com/search?q=token&page=2",
		"git@github.com:org/repo.git",
		"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		"uuid 123e4567-e89b-12d3-a456-426614174000",
	} {
		if got, redacted := Redact(in); redacted || got != in {
			t.Errorf("Redact(%q) = %q, %v; want unchanged", in, got, redacted)
		}
	}
}

func TestRedactEscapedText(t *testing.T) {
	runTextCases(t, []textCase{
		{"unicode-escaped prefix", `{"\u0073k-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zZx9": 1`, `{"` + R + `": 1`},
		{"escaped quote in a header", `curl -H \"Authorization: Bearer ` + keyBearer + `\"`, `curl -H \"Authorization: Bearer ` + R + `\"`},
		{"escaped newline before a key", `x\nAPI_KEY=abcd1234`, `x\nAPI_KEY=` + R},
		{"escaped slash in a url", `https:\/\/bob:s3cr3t-pw@host\/x`, `https:\/\/bob:` + R + `@host\/x`},
		{"windows path", `C:\new\token\abc`, ""},
	})
}
