package redact

import "strings"

// The entry points with a meter, for the linearity tests: each returns its
// output and the work it counted (see meter).

func redactWork(s string) (string, int) {
	var m meter
	out, _ := redactText(s, &m)
	return out, m.n
}

func containsWork(s string) (bool, int) {
	var m meter
	return len(findText(s, &m)) > 0, m.n
}

func redactJSONWork(s string) (string, int) {
	var m meter
	out, _ := redactJSON(s, &m)
	return out, m.n
}

func streamWork(frags []string) (string, int) {
	var m meter
	st := &Stream{m: &m}
	var out strings.Builder
	for _, f := range frags {
		out.WriteString(st.Write(f))
	}
	out.WriteString(st.Close())
	return out.String(), m.n
}
