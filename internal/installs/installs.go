// Package installs is the registry of repositories where the GitHub App is
// installed, kept in Redis so the webhook and the worker share it.
//
// Keys (one hash tag, so every script touches a single Redis Cluster slot):
//
//	{queen:installs}:repos      HASH  lowercased "owner/name" -> "<installation id> <Owner/Name>"
//	{queen:installs}:suspended  SET   ids of suspended installations
//	{queen:installs}:synced     STRING  Unix time of the last complete sync from GitHub
//	{queen:installs}:moved      HASH  lowercased old "owner/name" -> the current "Owner/Name"
//	{queen:installs}:arrived    SET   lowercased "owner/name" a sync must still match with an old name (Sync)
//
// Every write publishes to Changed, so a Cache (the webhook's copy in
// memory) reloads.
//
// Repository names are case-insensitive on GitHub, so lookups are too; the
// value keeps the name as GitHub last spelled it.
package installs

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/ghrepo"
)

// Redis keys of the registry.
const (
	KeyRepos     = "{queen:installs}:repos"
	KeySuspended = "{queen:installs}:suspended"
	KeySynced    = "{queen:installs}:synced"
	KeyMoved     = "{queen:installs}:moved"
	KeyArrived   = "{queen:installs}:arrived"
	// Changed is the pub/sub channel every write publishes to.
	Changed = "{queen:installs}:changed"
)

// Installation is one installation of the App with the repositories it can
// access.
type Installation struct {
	ID        int64
	Repos     []string // "owner/name"
	Suspended bool
}

// Repo is an installed repository.
type Repo struct {
	Name           string // "owner/name"
	InstallationID int64
	Suspended      bool
}

// Registry is the Redis-backed registry. It is safe for concurrent use.
type Registry struct {
	rdb redis.UniversalClient
}

// New returns a registry stored in rdb.
func New(rdb redis.UniversalClient) *Registry { return &Registry{rdb: rdb} }

// setScript drops the repositories of installation ARGV[1], adds the
// name/value pairs from ARGV[3], and sets its suspended flag from ARGV[2].
// It scans the whole hash: installation events are rare and the hash is small.
var setScript = redis.NewScript(`
local prefix = ARGV[1] .. ' '
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if string.sub(all[i+1], 1, #prefix) == prefix then
    redis.call('HDEL', KEYS[1], all[i])
  end
end
for i = 3, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i+1])
end
if ARGV[2] == '1' then
  redis.call('SADD', KEYS[2], ARGV[1])
else
  redis.call('SREM', KEYS[2], ARGV[1])
end
redis.call('PUBLISH', '` + Changed + `', '')
return 0
`)

// removeReposScript deletes the names ARGV[2..] that still belong to
// installation ARGV[1] (a repository since moved to another installation stays).
var removeReposScript = redis.NewScript(`
local prefix = ARGV[1] .. ' '
for i = 2, #ARGV do
  local v = redis.call('HGET', KEYS[1], ARGV[i])
  if v and string.sub(v, 1, #prefix) == prefix then
    redis.call('HDEL', KEYS[1], ARGV[i])
  end
end
redis.call('PUBLISH', '` + Changed + `', '')
return 0
`)

// lookupScript returns the value of ARGV[1] and whether its installation is
// suspended, read atomically.
var lookupScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return false end
local id = string.match(v, '^(%d+) ')
return {v, redis.call('SISMEMBER', KEYS[2], id or '')}
`)

// Set replaces installation inst: its repositories become exactly inst.Repos
// and its suspended flag inst.Suspended.
func (r *Registry) Set(ctx context.Context, inst Installation) error {
	args, err := pairs(inst.ID, inst.Repos)
	if err != nil {
		return err
	}
	args = append([]any{inst.ID, flag(inst.Suspended)}, args...)
	if err := setScript.Run(ctx, r.rdb, []string{KeyRepos, KeySuspended}, args...).Err(); err != nil {
		return fmt.Errorf("installs: set installation %d: %w", inst.ID, err)
	}
	return nil
}

// Remove forgets installation id and all its repositories.
func (r *Registry) Remove(ctx context.Context, id int64) error {
	if err := checkID(id); err != nil {
		return err
	}
	if err := setScript.Run(ctx, r.rdb, []string{KeyRepos, KeySuspended}, id, "0").Err(); err != nil {
		return fmt.Errorf("installs: remove installation %d: %w", id, err)
	}
	return nil
}

// AddRepos records repos as accessible to installation id.
func (r *Registry) AddRepos(ctx context.Context, id int64, repos ...string) error {
	args, err := pairs(id, repos)
	if err != nil || len(args) == 0 {
		return err
	}
	if err := r.publishing(ctx, func(p redis.Pipeliner) { p.HSet(ctx, KeyRepos, args...) }); err != nil {
		return fmt.Errorf("installs: add repositories to installation %d: %w", id, err)
	}
	return nil
}

// RemoveRepos forgets repos of installation id.
func (r *Registry) RemoveRepos(ctx context.Context, id int64, repos ...string) error {
	if err := checkID(id); err != nil {
		return err
	}
	if len(repos) == 0 {
		return nil
	}
	args := []any{id}
	for _, name := range repos {
		args = append(args, ghrepo.Key(name))
	}
	if err := removeReposScript.Run(ctx, r.rdb, []string{KeyRepos}, args...).Err(); err != nil {
		return fmt.Errorf("installs: remove repositories of installation %d: %w", id, err)
	}
	return nil
}

// Suspend marks installation id suspended: its repositories stay known but
// nothing is decided for them.
func (r *Registry) Suspend(ctx context.Context, id int64) error {
	if err := checkID(id); err != nil {
		return err
	}
	if err := r.publishing(ctx, func(p redis.Pipeliner) { p.SAdd(ctx, KeySuspended, id) }); err != nil {
		return fmt.Errorf("installs: suspend installation %d: %w", id, err)
	}
	return nil
}

// Unsuspend clears the suspended mark of installation id.
func (r *Registry) Unsuspend(ctx context.Context, id int64) error {
	if err := checkID(id); err != nil {
		return err
	}
	if err := r.publishing(ctx, func(p redis.Pipeliner) { p.SRem(ctx, KeySuspended, id) }); err != nil {
		return fmt.Errorf("installs: unsuspend installation %d: %w", id, err)
	}
	return nil
}

// Replace makes the registry exactly insts, in one transaction (the start-up
// sync from GET /app/installations). complete says every installation's
// repositories were read: only then does the registry count as synced.
func (r *Registry) Replace(ctx context.Context, insts []Installation, complete bool) error {
	var fields []any
	var suspended []any
	for _, inst := range insts {
		p, err := pairs(inst.ID, inst.Repos)
		if err != nil {
			return err
		}
		fields = append(fields, p...)
		if inst.Suspended {
			suspended = append(suspended, inst.ID)
		}
	}
	_, err := r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, KeyRepos, KeySuspended)
		if len(fields) > 0 {
			p.HSet(ctx, KeyRepos, fields...)
		}
		if len(suspended) > 0 {
			p.SAdd(ctx, KeySuspended, suspended...)
		}
		if complete {
			p.Set(ctx, KeySynced, time.Now().Unix(), 0)
		}
		p.Publish(ctx, Changed, "")
		return nil
	})
	if err != nil {
		return fmt.Errorf("installs: replace registry: %w", err)
	}
	return nil
}

// publishing runs write and the publish to Changed in one transaction.
func (r *Registry) publishing(ctx context.Context, write func(redis.Pipeliner)) error {
	_, err := r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		write(p)
		p.Publish(ctx, Changed, "")
		return nil
	})
	return err
}

// Synced reports whether the registry was ever filled by a complete sync
// from GitHub. Until it was, "not installed" only means "not known yet":
// 21 of 10,000 re-evaluations once completed as not installed in the
// seconds between a worker's start and its first sync.
func (r *Registry) Synced(ctx context.Context) (bool, error) {
	n, err := r.rdb.Exists(ctx, KeySynced).Result()
	if err != nil {
		return false, fmt.Errorf("installs: synced: %w", err)
	}
	return n == 1, nil
}

// Lookup finds repo ("owner/name", any case): its installation id and whether
// that installation is suspended; ok is false when repo is not installed.
func (r *Registry) Lookup(ctx context.Context, repo string) (installationID int64, suspended, ok bool, err error) {
	res, err := lookupScript.Run(ctx, r.rdb, []string{KeyRepos, KeySuspended}, ghrepo.Key(repo)).Slice()
	if err == redis.Nil {
		return 0, false, false, nil
	}
	if err != nil {
		return 0, false, false, fmt.Errorf("installs: look up %q: %w", repo, err)
	}
	if len(res) != 2 {
		return 0, false, false, fmt.Errorf("installs: look up %q: unexpected reply %v", repo, res)
	}
	v, _ := res[0].(string)
	id, _, err := parseValue(v)
	if err != nil {
		return 0, false, false, fmt.Errorf("installs: look up %q: %w", repo, err)
	}
	n, _ := res[1].(int64)
	return id, n == 1, true, nil
}

// Repos lists the installed repositories sorted by name.
func (r *Registry) Repos(ctx context.Context) ([]Repo, error) {
	all, err := r.readAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("installs: list repositories: %w", err)
	}
	repos := make([]Repo, 0, len(all))
	for _, repo := range all {
		repos = append(repos, repo)
	}
	sort.Slice(repos, func(i, j int) bool {
		return ghrepo.Key(repos[i].Name) < ghrepo.Key(repos[j].Name)
	})
	return repos, nil
}

// readAll reads the whole registry in one transaction, by ghrepo.Key.
func (r *Registry) readAll(ctx context.Context) (map[string]Repo, error) {
	var all *redis.MapStringStringCmd
	var susp *redis.StringSliceCmd
	_, err := r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		all = p.HGetAll(ctx, KeyRepos)
		susp = p.SMembers(ctx, KeySuspended)
		return nil
	})
	if err != nil {
		return nil, err
	}
	suspended := map[int64]bool{}
	for _, s := range susp.Val() {
		if id, err := strconv.ParseInt(s, 10, 64); err == nil {
			suspended[id] = true
		}
	}
	repos := make(map[string]Repo, len(all.Val()))
	for key, v := range all.Val() {
		id, name, err := parseValue(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		repos[key] = Repo{Name: name, InstallationID: id, Suspended: suspended[id]}
	}
	return repos, nil
}

func checkID(id int64) error {
	if id <= 0 {
		return fmt.Errorf("installs: installation id %d is not positive", id)
	}
	return nil
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// pairs are the hash field/value pairs of repos under installation id.
func pairs(id int64, repos []string) ([]any, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	out := make([]any, 0, 2*len(repos))
	for _, name := range repos {
		if !ghrepo.Valid(name) {
			return nil, fmt.Errorf("installs: installation %d: repository %q is not owner/name", id, name)
		}
		out = append(out, ghrepo.Key(name), strconv.FormatInt(id, 10)+" "+name)
	}
	return out, nil
}

func parseValue(v string) (id int64, name string, err error) {
	ids, name, ok := strings.Cut(v, " ")
	if ok {
		id, err = strconv.ParseInt(ids, 10, 64)
	}
	if !ok || err != nil || name == "" {
		return 0, "", fmt.Errorf("malformed registry value %q", v)
	}
	return id, name, nil
}

// SetMoved records that the repository once named old is now named to
// (a rename or transfer): rows written under old are found from to.
func (r *Registry) SetMoved(ctx context.Context, old, to string) error {
	if err := r.rdb.HSet(ctx, KeyMoved, ghrepo.Key(old), to).Err(); err != nil {
		return fmt.Errorf("installs: record %s moved to %s: %w", old, to, err)
	}
	return nil
}

// arrived are the repositories, by ghrepo.Key, that a sync must treat as
// new to their installation though it is written: installed by the
// repository event without their old name, or by a sync that could not
// finish asking where its lost names went (see Sync).
func (r *Registry) arrived(ctx context.Context) ([]string, error) {
	keys, err := r.rdb.SMembers(ctx, KeyArrived).Result()
	if err != nil {
		return nil, fmt.Errorf("installs: arrived repositories: %w", err)
	}
	return keys, nil
}

// markArrived marks repos arrived.
func (r *Registry) markArrived(ctx context.Context, repos ...string) error {
	if len(repos) == 0 {
		return nil
	}
	if err := r.rdb.SAdd(ctx, KeyArrived, keyArgs(repos)...).Err(); err != nil {
		return fmt.Errorf("installs: mark arrived repositories: %w", err)
	}
	return nil
}

// unmarkArrived unmarks repos, once a sync asked for their old names.
func (r *Registry) unmarkArrived(ctx context.Context, repos ...string) error {
	if len(repos) == 0 {
		return nil
	}
	if err := r.rdb.SRem(ctx, KeyArrived, keyArgs(repos)...).Err(); err != nil {
		return fmt.Errorf("installs: unmark arrived repositories: %w", err)
	}
	return nil
}

func keyArgs(repos []string) []any {
	keys := make([]any, len(repos))
	for i, name := range repos {
		keys[i] = ghrepo.Key(name)
	}
	return keys
}

// OldNames are the names repo had before a rename or transfer, as the sync
// saw them redirected.
func (r *Registry) OldNames(ctx context.Context, repo string) ([]string, error) {
	all, err := r.rdb.HGetAll(ctx, KeyMoved).Result()
	if err != nil {
		return nil, fmt.Errorf("installs: old names of %s: %w", repo, err)
	}
	var out []string
	for old, to := range all {
		if ghrepo.Same(to, repo) {
			out = append(out, old)
		}
	}
	sort.Strings(out)
	return out, nil
}

// movedScript records a rename or transfer from the repository event:
// installation ARGV[1] has the repository under its new name ARGV[5]
// (key ARGV[4]). When the old name ARGV[3] (key ARGV[2]) is installed, it
// stays, as Sync keeps it (its rows are read through GitHub's redirect),
// and it and every older name that led to it map to the new; a name taken
// back is its repository's again, so the new name maps nowhere. A new name
// whose old name is not installed is marked arrived (KEYS[3]): it is
// installed now, so the next Sync would not see it as new to its
// installation, yet that Sync must still find its old name. It returns 1
// when the old name was installed.
var movedScript = redis.NewScript(`
local known = redis.call('HEXISTS', KEYS[1], ARGV[2])
redis.call('HSET', KEYS[1], ARGV[4], ARGV[1] .. ' ' .. ARGV[5])
if known == 0 and ARGV[2] ~= ARGV[4] then
  redis.call('SADD', KEYS[3], ARGV[4])
end
if known == 0 or ARGV[2] == ARGV[4] then
  redis.call('PUBLISH', '` + Changed + `', '')
  return known
end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[1] .. ' ' .. ARGV[3])
local all = redis.call('HGETALL', KEYS[2])
for i = 1, #all, 2 do
  if string.lower(all[i+1]) == ARGV[2] then
    redis.call('HSET', KEYS[2], all[i], ARGV[5])
  end
end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[5])
redis.call('HDEL', KEYS[2], ARGV[4])
redis.call('PUBLISH', '` + Changed + `', '')
return 1
`)

// Moved records at once what GitHub's repository event says of a rename
// or transfer, without waiting for the next Sync: installation id reaches
// the repository once named old by its name now, to, which is installed.
// When old is installed, it stays so, and rows written under it (or any
// name before it) are found from to (OldNames); known says so. A name
// never installed is no name rows were written under: a transfer that
// also renamed names only the old owner, and the next Sync finds the old
// name by GitHub's redirect.
func (r *Registry) Moved(ctx context.Context, id int64, old, to string) (known bool, err error) {
	if err := checkID(id); err != nil {
		return false, err
	}
	for _, name := range []string{old, to} {
		if !ghrepo.Valid(name) {
			return false, fmt.Errorf("installs: installation %d: repository %q is not owner/name", id, name)
		}
	}
	n, err := movedScript.Run(ctx, r.rdb, []string{KeyRepos, KeyMoved, KeyArrived},
		id, ghrepo.Key(old), old, ghrepo.Key(to), to).Int()
	if err != nil {
		return false, fmt.Errorf("installs: record %s moved to %s: %w", old, to, err)
	}
	return n == 1, nil
}
