package redisconn

import "github.com/redis/go-redis/v9"

// RefusedError is Redis refusing our credentials (WRONGPASS, NOAUTH,
// NOPERM): a setting to fix, on
// our side or on Redis's, so callers keep retrying but name the variable.
type RefusedError struct {
	Vars string // what to check, in words naming the variables
	Err  error
}

func (e *RefusedError) Error() string {
	return "Redis refuses our credentials, check " + e.Vars + ": " + e.Err.Error()
}

func (e *RefusedError) Unwrap() error { return e.Err }

// Word is /readyz's reason for it: the detail goes to the log only.
func (e *RefusedError) Word() string { return "refused" }

// Refusal is err as a *RefusedError when it is Redis refusing s's
// credentials, else err itself.
func Refusal(err error, s *Spec) error {
	if err == nil || !refused(err) {
		return err
	}
	vars := PasswordVar + " (or the user:password of " + URLVar + ")"
	if redis.IsPermissionError(err) {
		vars = "the ACL of the user of " + URLVar + " (its commands and keys)"
	}
	if s != nil && s.Mode == Sentinel {
		vars += "; the sentinels' own is " + SentinelPasswordVar
	}
	return &RefusedError{Vars: vars, Err: err}
}

func refused(err error) bool { return redis.IsAuthError(err) || redis.IsPermissionError(err) }
