package demotools

import (
	"strings"
	"testing"
)

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want string
	}{
		{"product", "17 * 23", "391"},
		{"precedence of * over +", "2 + 3 * 4", "14"},
		{"parentheses", "(2 + 3) * 4", "20"},
		{"nested parentheses", "((1 + 2) * (3 + 4)) - 1", "20"},
		{"subtraction is left associative", "10 - 4 - 3", "3"},
		{"division is left associative", "100 / 10 / 5", "2"},
		{"remainder is left associative", "100 % 7 % 3", "2"},
		{"mixed level is left associative", "8 / 2 * 4", "16"},
		{"power is right associative", "2 ^ 3 ^ 2", "512"},
		{"power binds tighter than unary minus", "-2 ^ 2", "-4"},
		{"parenthesized negative base", "(-2) ^ 2", "4"},
		{"negative exponent", "2 ^ -1", "0.5"},
		{"power binds tighter than *", "3 * 2 ^ 2", "12"},
		{"unary minus", "-5 + 2", "-3"},
		{"double unary minus", "--3", "3"},
		{"unary plus", "+4", "4"},
		{"minus of a group", "-(2 + 3)", "-5"},
		{"unary minus after operator", "3 * -2", "-6"},
		{"decimals", "1.5 * 2", "3"},
		{"leading dot", ".5 + .25", "0.75"},
		{"binary rounding hidden", "0.1 + 0.2", "0.3"},
		{"division", "1 / 4", "0.25"},
		{"repeating fraction", "1 / 3", "0.333333333333333"},
		{"remainder has the dividend's sign", "-7 % 3", "-1"},
		{"decimal remainder", "5.5 % 2", "1.5"},
		{"no blanks", "2*(3+4)", "14"},
		{"tabs", "\t2\t+\t2\t", "4"},
		{"zero is not negative", "-0", "0"},
		{"large integer", "2 ^ 40", "1099511627776"},
		{"large number", "10 ^ 20", "1e+20"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := evaluate(tt.expr)
			if err != nil {
				t.Fatalf("evaluate(%q) error = %v; want %s", tt.expr, err, tt.want)
			}
			if got := formatNumber(v); got != tt.want {
				t.Errorf("evaluate(%q) = %s; want %s", tt.expr, got, tt.want)
			}
		})
	}
}

func TestEvaluateErrors(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want string // a substring of the error
	}{
		{"empty", "", "empty expression"},
		{"blank", "   ", "empty expression"},
		{"division by zero", "1 / 0", "division by zero"},
		{"division by computed zero", "1 / (2 - 2)", "division by zero"},
		{"remainder by zero", "5 % 0", "division by zero"},
		{"trailing operator", "2 +", "unexpected end of expression"},
		{"leading operator", "* 2", `unexpected '*' at position 1`},
		{"doubled operator", "2 ** 3", `unexpected '*' at position 4`},
		{"missing closing parenthesis", "(2 + 3", "missing closing parenthesis"},
		{"unbalanced closing parenthesis", "2 + 3)", `unexpected ')' at position 6`},
		{"empty parentheses", "()", `unexpected ')' at position 2`},
		{"implicit multiplication", "2(3)", `unexpected '(' at position 2`},
		{"identifier", "abc", `unexpected 'a' at position 1`},
		{"function call", "sqrt(4)", `unexpected 's' at position 1`},
		{"code", `__import__("os")`, `unexpected '_' at position 1`},
		{"exponent notation", "1e3", `unexpected 'e' at position 2`},
		{"two dots", "1.2.3", `invalid number "1.2.3" at position 1`},
		{"lone dot", ".", `invalid number "." at position 1`},
		{"non-ASCII", "2 × 3", `unexpected '×' at position 3`},
		{"newline", "2\n+ 3", `unexpected '\n' at position 2`},
		{"overflow", "10 ^ 400", "result out of range"},
		{"overflowing product", "10^300 * 10^300", "result out of range"},
		{"not a real number", "(-8) ^ 0.5", "result is not a real number"},
		{"too long", strings.Repeat("1+", 128) + "1", "longer than 256 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := evaluate(tt.expr)
			if err == nil {
				t.Fatalf("evaluate(%q) = %v; want an error containing %q", tt.expr, v, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("evaluate(%q) error = %q; want it to contain %q", tt.expr, err, tt.want)
			}
		})
	}
}

func TestEvaluateLongestAccepted(t *testing.T) {
	expr := strings.Repeat("(", 126) + "1" + strings.Repeat(")", 126) + "+1 " // 256 bytes
	if len(expr) != maxExpressionLen {
		t.Fatalf("len(expr) = %d; want %d", len(expr), maxExpressionLen)
	}
	v, err := evaluate(expr)
	if err != nil || v != 2 {
		t.Errorf("evaluate(256 bytes of nesting) = %v, %v; want 2, nil", v, err)
	}
}

func FuzzEvaluate(f *testing.F) {
	for _, s := range []string{"17 * 23", "-2^2", "(1+2)*3", "1/0", "2^3^2", ".5%0.2", "((("} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		v, err := evaluate(expr) // must not panic or recurse without bound
		if err == nil && len(expr) > maxExpressionLen {
			t.Errorf("evaluate accepted %d bytes", len(expr))
		}
		if err == nil {
			_ = formatNumber(v)
		}
	})
}
