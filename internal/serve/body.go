package serve

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"
)

// FirstRead is the buffer a body gets before its first byte arrives (or its
// Content-Length, when smaller): small, so a request that claims a large
// body and sends nothing holds no more. It takes a GitHub pull_request
// payload (about 28 KB) in two reads.
const FirstRead = 16 << 10

// ErrBudget is ReadBody's error when the body's next bytes would pass the
// Budget: the request is to be refused at once (503 with Retry-After).
var ErrBudget = errors.New("body bytes in flight past the budget")

// ErrSlowBody is ReadBody's error when the body did not arrive in time.
var ErrSlowBody = errors.New("body not received in time")

// ReadBody reads r's body as its bytes arrive: the buffer starts at
// FirstRead and doubles while bytes come, never past the Content-Length,
// each growth charged to lease before it is made. So memory follows the
// bytes received, never the bytes claimed. A body longer than most is an
// *http.MaxBytesError (a Content-Length over most before a byte is read);
// one that has not arrived within the given time is ErrSlowBody (and its
// connection is closed after the answer); ErrBudget when lease cannot grow.
func ReadBody(w http.ResponseWriter, r *http.Request, lease *Lease, most int64, within time.Duration) ([]byte, error) {
	if r.ContentLength > most {
		return nil, &http.MaxBytesError{Limit: most}
	}
	// net/http clears the deadline once the body is read to its end (its
	// background read starts), so the handler's own work is not bound by
	// it; a body left unread keeps it, which bounds net/http's discarding
	// of the rest after the answer. A ResponseRecorder has no deadline.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(within))
	limit := most + 1 // one byte past most tells a body of unknown length too long
	if r.ContentLength >= 0 {
		limit = r.ContentLength // net/http never yields more
	}
	var buf []byte
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) == limit {
				if limit > most {
					return nil, &http.MaxBytesError{Limit: most}
				}
				return buf, nil
			}
			next := min(limit, max(FirstRead, 2*int64(cap(buf))))
			// The old buffer is garbage once copied: charge the growth.
			if !lease.Grow(next - int64(cap(buf))) {
				return nil, ErrBudget
			}
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case errors.Is(err, io.EOF):
			if int64(len(buf)) > most {
				return nil, &http.MaxBytesError{Limit: most}
			}
			return buf, nil
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, ErrSlowBody
		case err != nil:
			return nil, err
		}
	}
}
