package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// runProbe is the health check of images without a shell or curl (the
// distroless image): it GETs each URL and succeeds only when every one
// answers 2xx.
func runProbe(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("probe", "[--timeout 2s] URL...", "info")
	timeout := f.Duration("timeout", 2*time.Second, "time allowed for each request")
	if err := f.Parse(args); err != nil {
		return err
	}
	if f.NArg() == 0 {
		return errors.New("probe: give the URLs to check, such as http://127.0.0.1:9090/readyz")
	}
	hc := &http.Client{Timeout: *timeout}
	for _, u := range f.Args() {
		if err := probe(ctx, hc, u); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s ok\n", u)
	}
	return nil
}

func probe(ctx context.Context, hc *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // let the connection be reused
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("probe: %s: %s", url, resp.Status)
	}
	return nil
}
