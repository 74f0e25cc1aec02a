package config

// Secrets lists c's secret values (webhook secrets, tokens, the Redis
// passwords, the URL's included), for a logger to redact wherever they
// would appear. Load has held each to MinSecretLen.
func (c *Config) Secrets() []string {
	out := []string{}
	all := []string{c.WebhookSecret, c.WebhookSecretPrev, c.APIToken, c.UIToken, c.ExportToken,
		c.RedisPassword, c.RedisSentinelPassword}
	if c.RedisURL != "" && c.RedisPassword == "" {
		if s, err := c.Redis(); err == nil {
			all = append(all, s.Password) // the URL's own
		}
	}
	for _, s := range all {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
