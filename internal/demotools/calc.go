package demotools

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// maxExpressionLen bounds an expression, and with it the parser's recursion.
const maxExpressionLen = 256

var errDivisionByZero = errors.New("division by zero")

// evaluate computes an arithmetic expression by recursive descent:
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/" | "%") unary }
//	unary   = ("-" | "+") unary | power
//	power   = primary [ "^" unary ]
//	primary = number | "(" expr ")"
//
// so ^ binds tighter than unary minus and associates to the right
// (-2^2 = -4, 2^3^2 = 512), and the other operators associate to the left.
// % is the remainder with the sign of the dividend. Numbers are decimals
// such as 17, 0.5 or .5; blanks are ignored. Anything else is an error.
func evaluate(expr string) (float64, error) {
	if len(expr) > maxExpressionLen {
		return 0, fmt.Errorf("expression longer than %d characters", maxExpressionLen)
	}
	p := &parser{src: expr}
	p.skipBlanks()
	if p.done() {
		return 0, errors.New("empty expression")
	}
	v, err := p.expr()
	if err != nil {
		return 0, err
	}
	if !p.done() {
		return 0, p.unexpected()
	}
	return v, nil
}

type parser struct {
	src string
	pos int
}

func (p *parser) done() bool { return p.pos >= len(p.src) }

func (p *parser) skipBlanks() {
	for !p.done() && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

// accept consumes op if it is the next token.
func (p *parser) accept(op byte) bool {
	if !p.done() && p.src[p.pos] == op {
		p.pos++
		p.skipBlanks()
		return true
	}
	return false
}

func (p *parser) unexpected() error {
	if p.done() {
		return errors.New("unexpected end of expression")
	}
	r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
	return fmt.Errorf("unexpected %q at position %d", r, p.pos+1)
}

func (p *parser) expr() (float64, error) {
	v, err := p.term()
	if err != nil {
		return 0, err
	}
	for {
		switch {
		case p.accept('+'):
			w, err := p.term()
			if err != nil {
				return 0, err
			}
			if v, err = finite(v + w); err != nil {
				return 0, err
			}
		case p.accept('-'):
			w, err := p.term()
			if err != nil {
				return 0, err
			}
			if v, err = finite(v - w); err != nil {
				return 0, err
			}
		default:
			return v, nil
		}
	}
}

func (p *parser) term() (float64, error) {
	v, err := p.unary()
	if err != nil {
		return 0, err
	}
	for {
		var op byte
		switch {
		case p.accept('*'):
			op = '*'
		case p.accept('/'):
			op = '/'
		case p.accept('%'):
			op = '%'
		default:
			return v, nil
		}
		w, err := p.unary()
		if err != nil {
			return 0, err
		}
		switch op {
		case '*':
			v = v * w
		case '/':
			if w == 0 {
				return 0, errDivisionByZero
			}
			v = v / w
		case '%':
			if w == 0 {
				return 0, errDivisionByZero
			}
			v = math.Mod(v, w)
		}
		if v, err = finite(v); err != nil {
			return 0, err
		}
	}
}

func (p *parser) unary() (float64, error) {
	switch {
	case p.accept('-'):
		v, err := p.unary()
		return -v, err
	case p.accept('+'):
		return p.unary()
	}
	return p.power()
}

func (p *parser) power() (float64, error) {
	base, err := p.primary()
	if err != nil {
		return 0, err
	}
	if !p.accept('^') {
		return base, nil
	}
	exp, err := p.unary()
	if err != nil {
		return 0, err
	}
	return finite(math.Pow(base, exp))
}

func (p *parser) primary() (float64, error) {
	if p.accept('(') {
		v, err := p.expr()
		if err != nil {
			return 0, err
		}
		if !p.accept(')') {
			if p.done() {
				return 0, errors.New("missing closing parenthesis")
			}
			return 0, p.unexpected()
		}
		return v, nil
	}
	start := p.pos
	for !p.done() && (isDigit(p.src[p.pos]) || p.src[p.pos] == '.') {
		p.pos++
	}
	if start == p.pos {
		return 0, p.unexpected()
	}
	text := p.src[start:p.pos]
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("number %s out of range", text)
		}
		return 0, fmt.Errorf("invalid number %q at position %d", text, start+1)
	}
	p.skipBlanks()
	return v, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// finite rejects overflows and results that are not real numbers, such as
// (-8)^0.5.
func finite(v float64) (float64, error) {
	if math.IsInf(v, 0) {
		return 0, errors.New("result out of range")
	}
	if math.IsNaN(v) {
		return 0, errors.New("result is not a real number")
	}
	return v, nil
}

// formatNumber writes v with up to 15 significant digits, enough to hide
// binary rounding (0.1 + 0.2 is 0.3) and to show integers up to 10^15 whole.
func formatNumber(v float64) string {
	if v == 0 {
		return "0" // not "-0"
	}
	return strconv.FormatFloat(v, 'g', 15, 64)
}
