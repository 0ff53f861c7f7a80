package testkit

import (
	"strconv"
	"strings"
)

// SumSeries sums the samples of the Prometheus exposition text whose line
// starts with prefix (a metric name and "{", or a whole series).
func SumSeries(text, prefix string) float64 {
	var n float64
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			n += v
		}
	}
	return n
}
