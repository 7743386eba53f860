package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

func newProbeCmd() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "probe [--timeout 2s] URL...",
		Short: "GET URLs and fail unless each answers 2xx: the health check of the container image",
		Long: `GET each URL and succeed only when every one answers 2xx: the health check
of images without a shell or curl (the distroless image).`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("probe: give the URLs to check, such as http://127.0.0.1:9090/readyz")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProbe(cmd.Context(), timeout, args, cmd.OutOrStdout())
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Second, "time allowed for each request")
	return cmd
}

func runProbe(ctx context.Context, timeout time.Duration, urls []string, out io.Writer) error {
	hc := &http.Client{Timeout: timeout}
	for _, u := range urls {
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
