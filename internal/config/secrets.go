package config

import "net/url"

// Secrets lists c's secret values (webhook secrets, tokens, the Redis
// password), for a logger to redact wherever they would appear.
func (c *Config) Secrets() []string {
	out := []string{}
	for _, s := range []string{c.WebhookSecret, c.WebhookSecretPrev, c.APIToken, c.ExportToken} {
		if s != "" {
			out = append(out, s)
		}
	}
	if u, err := url.Parse(c.RedisURL); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			out = append(out, p)
		}
	}
	return out
}
