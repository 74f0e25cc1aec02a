// Package deps pins the modules the project is built on while their first
// users are written; it is removed once real code imports each of them.
package deps

import (
	_ "github.com/bradleyfalzon/ghinstallation/v2"
	_ "github.com/google/go-github/v66/github"
	_ "github.com/hibiken/asynq"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/redis/go-redis/v9"
)
