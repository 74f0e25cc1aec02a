package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
)

// reachTransport names QUEEN_API_URL and its value when the claims API
// cannot be reached, so a refused connection says where queenctl looked
// and which variable moves it.
type reachTransport struct {
	base string
	rt   http.RoundTripper
}

func (t reachTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(r)
	var op *net.OpError
	if err != nil && errors.As(err, &op) && op.Op == "dial" {
		return nil, fmt.Errorf("cannot reach the claims API at QUEEN_API_URL=%s (is the webhook running there?): %w", t.base, err)
	}
	return resp, err
}
