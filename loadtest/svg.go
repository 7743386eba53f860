package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
)

// The chart's geometry, in pixels.
const (
	svgWidth     = 980
	svgChartH    = 260 // the plot area of each chart
	svgTop       = 72  // above the first plot: title and legend
	svgGap       = 110 // between the plots: axis labels and the next title
	svgLeft      = 70  // the y axis and its labels
	svgRight     = 20
	svgBarGap    = 2
	svgGroupGap  = 14
	svgSceneGap  = 28
	svgFontSize  = 11
	svgTitleSize = 14
)

// svgColors are the bars' colours: the percentiles, then throughput.
var svgColors = []string{"#4c78a8", "#f58518", "#e45756", "#54a24b"}

// svgPathLabel is a path's label under its bars.
var svgPathLabel = map[string]string{pathBare: "bare", pathRaw: "raw", pathCore: "core", pathClient: "client"}

// WriteSVG writes charts of the timed legs: each leg's time to first
// chunk and turn latency (p50, p90, p99, medians over the rounds) and its
// throughput, on log scales, grouped by scenario. It is plain SVG, no
// script or style sheet.
func (r *ProfileReport) WriteSVG(w io.Writer) error {
	var legs []*LegSummary
	for _, sc := range scenarios {
		for _, path := range paths {
			if l := r.findLeg(sc.Name, path); l != nil {
				legs = append(legs, l)
			}
		}
	}
	first := make([][]float64, len(legs))
	lat := make([][]float64, len(legs))
	tps := make([][]float64, len(legs))
	for i, l := range legs {
		first[i] = []float64{l.FirstChunkP50.Median, l.FirstChunkP90.Median, l.FirstChunkP99.Median}
		lat[i] = []float64{l.TotalP50.Median, l.TotalP90.Median, l.TotalP99.Median}
		tps[i] = []float64{l.TurnsPerSecond.Median}
	}
	charts := []struct {
		title  string
		values [][]float64
		colors []string
		unit   string
		legend bool
	}{
		{"time to first chunk, from the request or submit (ms, log scale)", first, svgColors[:3], "ms", true},
		{"turn latency, to the last record (ms, log scale)", lat, svgColors[:3], "ms", true},
		{"throughput (completed turns/s, log scale)", tps, svgColors[3:], "turns/s", false},
	}

	var b strings.Builder
	height := svgTop + len(charts)*svgChartH + (len(charts)-1)*svgGap + 50
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="%d">`+"\n",
		svgWidth, height, svgWidth, height, svgFontSize)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", svgWidth, height)
	title := fmt.Sprintf("turnstream load test, profile %s (%d rounds, %d CPUs, %s, %s): medians over the rounds",
		r.Profile, r.Config.Rounds, r.Machine.CPUs, r.Machine.GoVersion, r.Date)
	svgText(&b, svgLeft, 22, title, "start", svgTitleSize, "bold")
	for i, c := range charts {
		top := svgTop + i*(svgChartH+svgGap)
		svgText(&b, svgLeft, top-22, c.title, "start", 12, "bold")
		if c.legend {
			svgLegend(&b, svgWidth-svgRight-240, top-32, []string{"p50", "p90", "p99"}, c.colors)
		}
		svgBars(&b, top, legs, c.values, c.colors, c.unit)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// svgBars draws one chart: for each leg a group of bars (one per value),
// on a log-10 axis spanning the values' decades, the legs grouped by
// scenario and labelled by path.
func svgBars(b *strings.Builder, top int, legs []*LegSummary, values [][]float64, colors []string, unit string) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, vs := range values {
		for _, v := range vs {
			if v > 0 && !math.IsNaN(v) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1, 10
	}
	dlo, dhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dhi <= dlo {
		dhi = dlo + 1
	}
	plotW := svgWidth - svgLeft - svgRight
	bottom := top + svgChartH
	yOf := func(v float64) float64 {
		return float64(bottom) - (math.Log10(v)-dlo)/(dhi-dlo)*svgChartH
	}
	// Axis and decade grid lines.
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333333"/>`+"\n", svgLeft, top, svgLeft, bottom)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333333"/>`+"\n", svgLeft, bottom, svgLeft+plotW, bottom)
	for d := dlo; d <= dhi; d++ {
		y := yOf(math.Pow(10, d))
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#dddddd"/>`+"\n", svgLeft, y, svgLeft+plotW, y)
		svgText(b, svgLeft-6, int(y)+4, svgNumber(math.Pow(10, d)), "end", svgFontSize, "")
	}
	fmt.Fprintf(b, `<text x="0" y="0" transform="translate(20 %d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", top+svgChartH/2, xmlEscape(unit))

	// Groups: scenarios apart by svgSceneGap, legs within by svgGroupGap.
	nScenes := 0
	last := ""
	for _, l := range legs {
		if l.Scenario != last {
			nScenes++
			last = l.Scenario
		}
	}
	bars := 0
	if len(values) > 0 {
		bars = len(values[0])
	}
	free := float64(plotW) - float64(len(legs))*svgGroupGap - float64(nScenes)*svgSceneGap
	barW := max(free/float64(max(len(legs)*bars, 1))-svgBarGap, 2)
	x := float64(svgLeft) + svgSceneGap/2
	last = ""
	sceneStart := x
	flushScene := func(end float64) {
		if last != "" {
			svgText(b, int((sceneStart+end)/2), bottom+34, sceneLabel(last), "middle", svgFontSize, "bold")
		}
	}
	for i, l := range legs {
		if l.Scenario != last {
			if last != "" {
				flushScene(x - svgGroupGap)
				x += svgSceneGap
			}
			last, sceneStart = l.Scenario, x
		}
		groupStart := x
		for j, v := range values[i] {
			if v > 0 && !math.IsNaN(v) {
				y := yOf(v)
				fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`+"\n",
					x, y, barW, float64(bottom)-y, colors[j%len(colors)], xmlEscape(fmt.Sprintf("%s %s: %s %s", l.Scenario, svgPathLabel[l.Path], svgNumber(v), unit)))
			}
			x += barW + svgBarGap
		}
		svgText(b, int((groupStart+x)/2), bottom+16, svgPathLabel[l.Path], "middle", svgFontSize, "")
		x += svgGroupGap
	}
	flushScene(x - svgGroupGap)
}

// sceneLabel describes a scenario under its group.
func sceneLabel(name string) string {
	for _, sc := range scenarios {
		if sc.Name == name {
			return fmt.Sprintf("%d-chunk turns, %d in flight", sc.Frames, sc.Concurrency)
		}
	}
	return name
}

func svgLegend(b *strings.Builder, x, y int, names, colors []string) {
	for i, n := range names {
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/>`+"\n", x+i*80, y, colors[i])
		svgText(b, x+i*80+16, y+10, n, "start", svgFontSize, "")
	}
}

func svgText(b *strings.Builder, x, y int, s, anchor string, size int, weight string) {
	w := ""
	if weight != "" {
		w = fmt.Sprintf(` font-weight="%s"`, weight)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="%s" font-size="%d"%s>%s</text>`+"\n", x, y, anchor, size, w, xmlEscape(s))
}

func xmlEscape(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s)) //nolint:errcheck // a strings.Builder does not fail
	return b.String()
}

// svgNumber prints a value with about three significant digits.
func svgNumber(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
