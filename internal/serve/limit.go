package serve

import "net/http"

// Limiter bounds the requests in flight; a request past the bound is
// refused at once rather than queued, so memory stays bounded under a flood
// and the client retries.
type Limiter chan struct{}

// NewLimiter admits up to n requests at a time.
func NewLimiter(n int) Limiter { return make(Limiter, n) }

// Acquire takes a place if one is free; a true answer must be Released.
func (l Limiter) Acquire() bool {
	select {
	case l <- struct{}{}:
		return true
	default:
		return false
	}
}

// Release frees a place taken by Acquire.
func (l Limiter) Release() { <-l }

// BusyError is the text of the 503 answering a request past the limit.
const BusyError = "too many requests in flight, retry later"

// Refuse answers a request past a limit: 503 with Retry-After.
func Refuse(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	WriteError(w, http.StatusServiceUnavailable, BusyError)
}
