package redact

// Credentials shaped like real ones, for the tests. None is live.
const (
	keyOpenAI       = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z-Zx9Cv8Bn7Ml6Kj5Hg4Fd3Sa2Qw1Er0Ty_T3BlbkFJ"
	keyOpenAILegacy = "sk-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zZx9Cv8Bn7Ml6Kj5H"
	keyAnthropic    = "sk-ant-api03-Xy7Kq2Lm9Np4Rs6Tu8Vw1Yz3Ab5Cd7Ef9Gh2Ij4Kl6Mn8Op0Qr-AA"
	keyAWSID        = "AKIAIOSFODNN7EXAMPLE"
	keyAWSTempID    = "ASIAY34FZKBOKMUTVV7A"
	keyAWSSecret    = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	keyGitHub       = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
	keyGitHubApp    = "ghs_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
	keyGitHubOAuth  = "gho_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
	keyGitHubPAT    = "github_pat_11ABCDEFG0aBcDeFgHiJkLmN_OpQrStUvWxYz0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ012345678"
	keySlack        = "xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
	keyGoogle       = "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
	keyStripe       = "sk_live_51H8abcdEFGHijklMNOPqrst0123456789"
	keyStripeRK     = "rk_live_51H8abcdEFGHijklMNOPqrst0123456789"
	keyJWT          = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	keyBearer       = "d8f7a6b5c4e3f2a1b0c9d8e7f6a5b4c3"
	keyBasic        = "YWxpY2U6czNjcjN0LXBhc3M=" // alice:s3cr3t-pass
	keyPassword     = "Tr0ub4dor&3x"
	keyPEMBody      = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK"
)

// shapedSecrets are detectable by their shape alone, anywhere.
var shapedSecrets = []string{
	keyOpenAI, keyOpenAILegacy, keyAnthropic, keyAWSID, keyAWSTempID,
	keyGitHub, keyGitHubApp, keyGitHubOAuth, keyGitHubPAT, keySlack, keyGoogle,
	keyStripe, keyStripeRK, keyJWT,
}

// contextSecrets are detectable only by their context: a secret key, an
// authorization scheme, a URL's userinfo.
var contextSecrets = []string{keyAWSSecret, keyBearer, keyBasic, keyPassword}

// plantedSecrets are all of them; the property and fuzz tests plant them
// where their context makes them detectable, and none may survive.
var plantedSecrets = append(append([]string(nil), shapedSecrets...), contextSecrets...)
