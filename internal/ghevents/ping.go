package ghevents

import (
	"context"
	"net/http"
)

// ping answers GitHub's ping (sent when the hook is created) with a pong.
func (h *handler) ping(_ context.Context, _ *delivery, body []byte) outcome {
	if !validJSON(body) {
		return fail(http.StatusBadRequest, "body is not valid JSON")
	}
	return outcome{code: http.StatusOK, status: "pong"}
}
