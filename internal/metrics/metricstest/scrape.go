// Package metricstest scrapes a /metrics endpoint in tests, over real
// HTTP, and reads its samples by name and labels. It is for tests only.
package metricstest

import (
	"io"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one series' value: a counter's or a gauge's, or a
// histogram's count (Name with _count) or sum (_sum).
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Scrape is what one GET of /metrics answered.
type Scrape struct {
	// Text is the exposition as served.
	Text    string
	Samples []Sample
}

// Get scrapes url (a /metrics endpoint) and parses what it serves,
// failing the test if it does not answer 200 with the text format.
func Get(t testing.TB, url string) Scrape {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a loopback test server
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %s; want 200\n%s", url, resp.Status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("GET %s: the exposition does not parse: %v\n%s", url, err, body)
	}
	s := Scrape{Text: string(body)}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			s.Samples = append(s.Samples, samples(name, f.GetType(), m, labels)...)
		}
	}
	return s
}

func samples(name string, typ dto.MetricType, m *dto.Metric, labels map[string]string) []Sample {
	switch typ {
	case dto.MetricType_COUNTER:
		return []Sample{{Name: name, Labels: labels, Value: m.GetCounter().GetValue()}}
	case dto.MetricType_GAUGE:
		return []Sample{{Name: name, Labels: labels, Value: m.GetGauge().GetValue()}}
	case dto.MetricType_HISTOGRAM:
		h := m.GetHistogram()
		return []Sample{
			{Name: name + "_count", Labels: labels, Value: float64(h.GetSampleCount())},
			{Name: name + "_sum", Labels: labels, Value: h.GetSampleSum()},
		}
	case dto.MetricType_UNTYPED:
		return []Sample{{Name: name, Labels: labels, Value: m.GetUntyped().GetValue()}}
	}
	return nil
}

// Sum adds the values of the series of name whose labels include every
// pair of labels, given as "key", "value", ...: 0 when none does.
func (s Scrape) Sum(name string, labels ...string) float64 {
	var sum float64
	for _, x := range s.Samples {
		if x.Name == name && has(x.Labels, labels) {
			sum += x.Value
		}
	}
	return sum
}

// Has reports whether the exposition has a series of name.
func (s Scrape) Has(name string) bool {
	for _, x := range s.Samples {
		if x.Name == name {
			return true
		}
	}
	return false
}

// Lines returns the exposition's lines that start with prefix (an
// excerpt, for a failure message or a report).
func (s Scrape) Lines(prefix string) string {
	var out []string
	for _, l := range strings.Split(s.Text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func has(labels map[string]string, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		if labels[pairs[i]] != pairs[i+1] {
			return false
		}
	}
	return true
}
