// Package docs holds the claims API's OpenAPI description, docs/openapi.yaml,
// so the webhook serves and the tests validate the one file people read.
package docs

import _ "embed"

// OpenAPI is docs/openapi.yaml as written.
//
//go:embed openapi.yaml
var OpenAPI []byte
