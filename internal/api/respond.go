package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/queen-app/queen-app/internal/apiwire"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redisavail"
)

// apiError is an answer decided by a handler.
type apiError struct {
	code  int
	msg   string
	field string
}

func (e *apiError) Error() string { return e.msg }

func badField(field, problem string) error {
	return &apiError{code: http.StatusBadRequest, msg: field + ": " + problem, field: field}
}

func badRequest(msg string) error { return &apiError{code: http.StatusBadRequest, msg: msg} }

// responseWriter remembers the route, the status and the internal error
// for metrics and the log.
type responseWriter struct {
	http.ResponseWriter
	route string
	code  int
	err   error // logged, never sent
}

func (w *responseWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *responseWriter) json(code int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // evidence reads "send_backs 1 < ceiling 2"
	if err := enc.Encode(v); err != nil {
		w.err = err
		code = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":"internal error"}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

func (w *responseWriter) fail(code int, msg, field string) {
	w.json(code, apiwire.Error{Error: msg, Field: field})
}

// failErr answers err: a handler's decision, a refused field, a missing
// row, a conflict, or (logged, not sent) an internal failure.
func (w *responseWriter) failErr(err error) {
	var ae *apiError
	var fe *dispatch.FieldError
	var ue *ledger.UnavailableError
	switch {
	case errors.As(err, &ae):
		w.fail(ae.code, ae.msg, ae.field)
	case errors.As(err, &fe):
		w.fail(http.StatusBadRequest, fe.Error(), fe.Field)
	case errors.Is(err, ledger.ErrNotFound):
		w.fail(http.StatusNotFound, "no such dispatch row", "")
	case errors.Is(err, ledger.ErrConflict):
		w.err = err
		w.fail(http.StatusConflict, "the row changed concurrently; retry", "")
	case errors.As(err, &ue):
		// The ledger is missing, replaced or newer: the message names what
		// happened and what to run.
		w.Header().Set("Retry-After", "5")
		w.fail(http.StatusServiceUnavailable, ue.Error(), "")
	case redisavail.Unavailable(err):
		w.err = err
		w.fail(http.StatusServiceUnavailable, "the claims ledger is unavailable; retry", "")
	default:
		w.err = err
		w.fail(http.StatusInternalServerError, "internal error", "")
	}
}

func parseRepo(s string) (string, error) {
	if !ghrepo.Valid(s) {
		return "", badField("repo", fmt.Sprintf("%q is not owner/name", s))
	}
	return s, nil
}

// maxIssue matches dispatch.Issue's bound.
const maxIssue = 1e10

func parseIssue(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > maxIssue || strings.HasPrefix(s, "+") {
		return 0, badField("issue", fmt.Sprintf("%q is not a positive whole number", s))
	}
	return n, nil
}

// readObject reads a capped JSON body that must be one object, each name
// of each of its objects given once.
func readObject(w *responseWriter, r *request) (map[string]json.RawMessage, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return nil, &apiError{code: http.StatusUnsupportedMediaType, msg: "Content-Type must be application/json"}
	}
	tooBig := &apiError{code: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("body larger than %d bytes", MaxBodyBytes)}
	if r.ContentLength > MaxBodyBytes {
		return nil, tooBig
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, MaxBodyBytes)); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooBig
		}
		return nil, badRequest("cannot read the body")
	}
	obj, err := dispatch.DecodeObject(buf.Bytes())
	if err != nil {
		return nil, badRequest("body: " + err.Error())
	}
	if name := duplicateName(buf.Bytes()); name != "" {
		return nil, badField(name, "given more than once")
	}
	return obj, nil
}

// onlyFields refuses any name of obj outside allowed, the first in order.
func onlyFields(obj map[string]json.RawMessage, prefix string, allowed ...string) error {
	var bad []string
	for name := range obj {
		if !slices.Contains(allowed, name) {
			bad = append(bad, name)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return badField(prefix+slices.Min(bad), "unknown field")
}

// query reads the query string, refusing unknown or repeated parameters so
// that a typo never passes as "no filter".
func query(r *request, allowed ...string) (map[string]string, error) {
	vals, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, badRequest("malformed query string")
	}
	out := make(map[string]string, len(vals))
	for name, v := range vals {
		switch {
		case !slices.Contains(allowed, name):
			return nil, badField(name, "unknown parameter")
		case len(v) > 1:
			return nil, badField(name, "given more than once")
		}
		out[name] = v[0]
	}
	return out, nil
}
